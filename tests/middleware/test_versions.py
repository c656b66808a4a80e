"""Live version checks: the seed's block format, the three sources (file, real HTTP, a downstream tool through the
gateway), TTL, single-flight, stale-on-error and graceful degradation (warnings, never errors; no source, no block)."""

import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
import mcp.types as types
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from gateway.app.gateway import Gateway
from gateway.config import DEFAULT_PATTERN, load_config
from gateway.middleware.version_sources import (
    SourceError,
    Versions,
    check_block,
    compact,
    find_tokens,
    from_file,
    from_http,
    parse,
)
from gateway.middleware.versions import CatalogSpec, Check, VersionChecks
from gateway.pipeline import Call
from gateway.results import HINTS_META_KEY
from gateway.store.cache import SharedCache
from tests.harness import PYTHON, ROOT, connected, hints_of, kitchen, text_of, tool_call, write_config


def tool_result(call: Call) -> types.CallToolResult:
    assert call.tool_result is not None
    return call.tool_result


pytestmark = pytest.mark.anyio

CATALOG_SERVER = str(ROOT / "tests" / "servers" / "catalog.py")
STACKS: Versions = {"bun": ["1.1.34", "1.2"], "nodejs": ["18", "20", "22"], "postgresql": ["16"]}
BUN_1 = "⚠ bun@1 — not found. Available: bun@1.1.34, bun@1.2. Use bun@1.2"
PG_16 = "✓ postgresql@16 — valid"
LIVE = "Live versions (stacks): bun@{1.1.34,1.2} | nodejs@{18,20,22} | postgresql@16"
TTL = 60.0
Mode = Literal["ok", "down", "garbage", "shape", "hang"]


# -- helpers ------------------------------------------------------------------------------------------


class Clock:
    """An injected timer: time moves only when a test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class HttpCatalog:
    """A real HTTP JSON endpoint that counts requests; `mode` decides the answer, `gate` holds answers back."""

    def __init__(self) -> None:
        self.requests = 0
        self.mode: Mode = "ok"
        self.gate: anyio.Event | None = None
        self.arrived = anyio.Event()
        self.never = anyio.Event()
        """`hang` waits on this; only the teardown sets it, long after the client gave up."""
        self.url = ""

    async def endpoint(self, request: Request) -> Response:
        self.requests += 1
        self.arrived.set()
        if self.gate is not None:
            await self.gate.wait()
        match self.mode:
            case "ok":
                return JSONResponse(STACKS)
            case "down":
                return PlainTextResponse("maintenance", status_code=503)
            case "garbage":
                return PlainTextResponse("<html>not json</html>")
            case "shape":
                return JSONResponse(["bun", "nodejs"])
            case "hang":
                await self.never.wait()
                return JSONResponse(STACKS)

    def load(self, timeout_s: float = 5.0) -> Callable[[], Awaitable[Versions]]:
        return lambda: from_http(self.url, {}, timeout_s)


class _Uvicorn(uvicorn.Server):
    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = anyio.Event()

    async def startup(self, sockets: list[Any] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self.ready.set()


@asynccontextmanager
async def http_catalog() -> AsyncIterator[HttpCatalog]:
    source = HttpCatalog()
    app = Starlette(routes=[Route("/versions", source.endpoint)])
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, log_config=None, access_log=False, lifespan="off", timeout_graceful_shutdown=1
    )
    server = _Uvicorn(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(10):
            await server.ready.wait()
        port = server.servers[0].sockets[0].getsockname()[1]
        source.url = f"http://127.0.0.1:{port}/versions"
        try:
            yield source
        finally:
            source.never.set()
            if source.gate is not None:
                source.gate.set()
            server.should_exit = True


def checks(
    load: Callable[[], Awaitable[Versions]],
    clock: Clock,
    *,
    scan: tuple[str, ...] = ("arguments",),
    append_to: tuple[str, ...] = (),
) -> VersionChecks:
    spec = CatalogSpec("stacks", load, TTL, append_to)
    check = Check("stacks", ("k.*",), scan, re.compile(DEFAULT_PATTERN))
    return VersionChecks({"stacks": spec}, [check], SharedCache(timer=clock), clock=clock)


def call(text: str, *, tool: str = "k.echo", result: str | None = None) -> Call:
    answer = types.CallToolResult(content=[types.TextContent(text=text if result is None else result)])
    return tool_call(tool, {"text": text}, result=answer)


async def hints(middleware: VersionChecks, c: Call) -> list[str]:
    await middleware.on_response(c)
    return [h.text for h in c.hints]


def unavailable(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "unavailable" in r.getMessage()]


def catalog_server(*extra: str, events: Path | None = None) -> dict[str, Any]:
    args = [CATALOG_SERVER, *extra, *(["--events-file", str(events)] if events else [])]
    return {"transport": "stdio", "command": PYTHON, "args": args}


def fetches(events: Path) -> int:
    return events.read_text().splitlines().count("call list_versions")


# -- formatting -----------------------------------------------------------------------------------------


def test_check_block_confirms_valid_versions_and_suggests_the_latest_for_missing_ones() -> None:
    tokens = [("postgresql", "16"), ("bun", "1"), ("nodejs", "22")]
    assert check_block(tokens, STACKS, strict_names=False) == "\n".join(
        ["Version check", PG_16, BUN_1, "✓ nodejs@22 — valid"]
    )


def test_unknown_names_are_warned_only_in_strict_mode_and_no_tokens_means_no_block() -> None:
    assert check_block([("ruby", "3")], STACKS, strict_names=True) == (
        "Version check\n⚠ ruby@3 — unknown name. Known: bun, nodejs, postgresql"
    )
    assert check_block([("ruby", "3")], STACKS, strict_names=False) == ""
    assert check_block([], STACKS, strict_names=True) == ""


def test_compact_list_sorts_names_and_versions_numerically() -> None:
    catalog = {"nodejs": ["22", "18", "20"], "postgresql": ["16"], "bun": ["1.2", "1.1.34"]}
    assert compact(catalog) == "bun@{1.1.34,1.2} | nodejs@{18,20,22} | postgresql@16"
    assert compact({"valkey": ["10", "9", "7.2"]}) == "valkey@{7.2,9,10}"


def test_default_pattern_finds_distinct_tokens_and_leaves_prose_punctuation_out() -> None:
    text = "Use nodejs@20. Then bun@1.2, python@3.12-slim, bun@1.2 again; mail me@example.com"
    assert find_tokens(text, re.compile(DEFAULT_PATTERN)) == [("nodejs", "20"), ("bun", "1.2"), ("python", "3.12-slim")]


@pytest.mark.parametrize(
    "data",
    [["bun"], {}, {"bun": [True]}, {"bun": [{"v": 1}]}, "bun@1"],
    ids=["list", "empty", "bool", "nested", "string"],
)
def test_parse_rejects_what_is_not_a_name_to_versions_mapping(data: object) -> None:
    with pytest.raises(SourceError):
        parse(data, "test")


def test_parse_accepts_a_single_version_and_numbers() -> None:
    assert parse({"postgresql": 16, "bun": ["1.2", 1.1]}, "test") == {"postgresql": ["16"], "bun": ["1.2", "1.1"]}


# -- sources ---------------------------------------------------------------------------------------------


async def test_file_source_reads_json_and_a_missing_or_bad_file_is_a_source_error(tmp_path: Path) -> None:
    good, garbage, shape = tmp_path / "good.json", tmp_path / "garbage.json", tmp_path / "shape.json"
    good.write_text(json.dumps(STACKS), encoding="utf-8")
    garbage.write_text("bun: [1.2]", encoding="utf-8")
    shape.write_text('["bun"]', encoding="utf-8")
    assert await from_file(str(good)) == STACKS
    for bad in (tmp_path / "absent.json", garbage, shape):
        with pytest.raises(SourceError, match=re.escape(str(bad))):
            await from_file(str(bad))


async def test_http_source_fetches_a_real_endpoint() -> None:
    async with http_catalog() as source:
        assert await source.load()() == STACKS
        assert source.requests == 1


async def test_http_source_that_does_not_answer_within_timeout_s_adds_no_block() -> None:
    clock = Clock()
    async with http_catalog() as source:
        source.mode = "hang"
        middleware = checks(source.load(timeout_s=0.3), clock)
        c = call("use bun@1")
        with anyio.fail_after(5):
            assert await hints(middleware, c) == []
        assert source.requests == 1
        assert c.error is None and text_of(tool_result(c)) == "use bun@1"


@pytest.mark.parametrize("mode", ["down", "garbage", "shape"])
async def test_a_failing_source_with_nothing_cached_adds_no_block_and_is_logged_once_per_ttl(
    mode: Mode, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    async with http_catalog() as source:
        source.mode = mode
        middleware = checks(source.load(), clock)
        for _ in range(3):
            c = call("use bun@1 and postgresql@16")
            assert await hints(middleware, c) == []
            assert c.error is None and text_of(tool_result(c)) == "use bun@1 and postgresql@16"
        assert source.requests == 1  # not asked again on every call while it is known to be down
        assert len(unavailable(caplog)) == 1
        clock.now += TTL + 1
        assert await hints(middleware, call("use bun@1")) == []
        assert source.requests == 2
        assert len(unavailable(caplog)) == 2
        source.mode = "ok"  # back up: the next TTL window uses it
        clock.now += TTL + 1
        assert await hints(middleware, call("use bun@1")) == [f"Version check\n{BUN_1}"]


# -- the middleware ------------------------------------------------------------------------------------


async def test_argument_scan_warns_about_bun_1_and_confirms_postgresql_16() -> None:
    async with http_catalog() as source:
        middleware = checks(source.load(), Clock())
        c = call("use bun@1 and postgresql@16 and ruby@3")
        assert await hints(middleware, c) == [
            f"Version check\n{BUN_1}\n{PG_16}\n⚠ ruby@3 — unknown name. Known: bun, nodejs, postgresql"
        ]
        assert text_of(tool_result(c)) == "use bun@1 and postgresql@16 and ruby@3"  # warnings, never a rewrite


async def test_arguments_are_scanned_as_strings_so_escapes_do_not_glue_onto_tokens() -> None:
    async with http_catalog() as source:
        middleware = checks(source.load(), Clock())
        c = tool_call("k.deploy", {"yaml": "stacks:\nbun@1.2\tnodejs@20"})
        assert await hints(middleware, c) == ["Version check\n✓ bun@1.2 — valid\n✓ nodejs@20 — valid"]


async def test_result_scan_checks_known_names_and_ignores_other_at_tokens() -> None:
    async with http_catalog() as source:
        middleware = checks(source.load(), Clock(), scan=("result",))
        c = call("what runs here?", result="installed bun@1 for admin@10.0.0.1 next to postgresql@16")
        assert await hints(middleware, c) == [f"Version check\n{BUN_1}\n{PG_16}"]
        assert await hints(middleware, call("what?", result="nothing versioned")) == []


async def test_append_catalog_to_appends_the_compact_live_list_to_matching_tools_only() -> None:
    async with http_catalog() as source:
        middleware = checks(source.load(), Clock(), append_to=("k.workflow",))
        assert await hints(middleware, call("bootstrap", tool="k.workflow")) == [LIVE]
        assert await hints(middleware, call("bootstrap", tool="k.other")) == []
        assert source.requests == 1


async def test_ttl_expiry_causes_exactly_one_refetch() -> None:
    clock = Clock()
    async with http_catalog() as source:
        middleware = checks(source.load(), clock)
        for _ in range(3):
            await hints(middleware, call("bun@1"))
        assert source.requests == 1
        clock.now += TTL - 1
        await hints(middleware, call("bun@1"))
        assert source.requests == 1
        clock.now += 2
        for _ in range(3):
            assert await hints(middleware, call("bun@1")) == [f"Version check\n{BUN_1}"]
        assert source.requests == 2


async def test_the_stale_catalog_is_used_when_the_source_goes_down_after_expiry(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    async with http_catalog() as source:
        middleware = checks(source.load(), clock)
        assert await hints(middleware, call("bun@1")) == [f"Version check\n{BUN_1}"]
        source.mode = "down"
        clock.now += TTL + 1
        for _ in range(3):
            assert await hints(middleware, call("bun@1 postgresql@16")) == [f"Version check\n{BUN_1}\n{PG_16}"]
        # One failed refetch, then a back-off of one TTL: later calls do not wait on the down source.
        assert source.requests == 2
        stale = [r for r in caplog.records if "serving the stale value" in r.getMessage()]
        assert len(stale) == 1
        assert unavailable(caplog) == []
        source.mode = "ok"
        clock.now += TTL + 1
        await hints(middleware, call("bun@1"))
        assert source.requests == 3


async def test_100_concurrent_calls_cause_exactly_one_fetch() -> None:
    async with http_catalog() as source:
        source.gate = anyio.Event()
        middleware = checks(source.load(), Clock())
        calls = [call(f"request {i}: bun@1") for i in range(100)]
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                for c in calls:
                    tg.start_soon(middleware.on_response, c)
                await source.arrived.wait()
                await anyio.wait_all_tasks_blocked()  # every caller is now waiting on the one fetch
                source.gate.set()
        assert source.requests == 1
        assert all([h.text for h in c.hints] == [f"Version check\n{BUN_1}"] for c in calls)


async def test_100_concurrent_calls_on_a_down_source_fetch_once_and_log_once(caplog: pytest.LogCaptureFixture) -> None:
    async with http_catalog() as source:
        source.mode, source.gate = "down", anyio.Event()
        middleware = checks(source.load(), Clock())
        calls = [call("bun@1") for _ in range(100)]
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                for c in calls:
                    tg.start_soon(middleware.on_response, c)
                await source.arrived.wait()
                await anyio.wait_all_tasks_blocked()
                source.gate.set()
        assert source.requests == 1
        assert all(c.hints == [] and c.error is None for c in calls)
        assert len(unavailable(caplog)) == 1


# -- the `tool` source: the catalog server as a stdio downstream of a real gateway ------------------------


async def test_a_downstream_tool_as_source_checks_arguments_and_appends_the_live_list(tmp_path: Path) -> None:
    events = tmp_path / "catalog-events.log"
    path = write_config(
        tmp_path,
        {"k": kitchen("k"), "catalog": catalog_server(events=events)},
        versions={
            "catalogs": {
                "stacks": {
                    "source": {"type": "tool", "tool": "catalog.list_versions"},
                    "append_catalog_to": ["k.measure"],
                }
            },
            "checks": [{"catalog": "stacks", "tools": ["k.echo"], "scan": ["arguments"]}],
        },
    )
    gateway = Gateway(load_config(path))
    async with connected(gateway) as (_, client):
        results: list[types.CallToolResult] = []

        async def echo(i: int) -> None:
            results.append(await client.call_tool("k.echo", {"text": f"{i}: use bun@1 and postgresql@16"}))

        async with anyio.create_task_group() as tg:
            for i in range(100):
                tg.start_soon(echo, i)
        measured = await client.call_tool("k.measure", {"text": "abc"})
    assert fetches(events) == 1  # 100 concurrent calls and one more: one source fetch
    block = f"[gateway] Version check\n{BUN_1}\n{PG_16}"
    assert len(results) == 100
    for result in results:
        assert not result.is_error
        assert text_of(result).endswith(": use bun@1 and postgresql@16")
        assert block in hints_of(result)
        assert {"kind": "version_check", "text": block.removeprefix("[gateway] ")} in (result.meta or {})[
            HINTS_META_KEY
        ]
    assert text_of(measured) == "received 3 chars"
    assert f"[gateway] {LIVE}" in hints_of(measured)


async def test_a_downstream_source_that_fails_or_answers_garbage_leaves_calls_unaffected(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    shape = tmp_path / "shape.json"
    shape.write_text('["bun", "nodejs"]', encoding="utf-8")
    servers = {
        "k": kitchen("k"),
        "down": catalog_server("--fail"),
        "junk": catalog_server("--garbage"),
        "odd": catalog_server("--data", str(shape)),
    }
    names = ("down", "junk", "odd")
    path = write_config(
        tmp_path,
        servers,
        bootstrap={"mode": "off"},
        versions={
            "catalogs": {n: {"source": {"type": "tool", "tool": f"{n}.list_versions"}} for n in names},
            "checks": [{"catalog": n, "tools": ["k.*"]} for n in names],
        },
    )
    gateway = Gateway(load_config(path))
    async with connected(gateway) as (_, client):
        for _ in range(3):
            result = await client.call_tool("k.echo", {"text": "deploy bun@1"})
            assert not result.is_error
            assert result.content == [types.TextContent(text="deploy bun@1")]  # no hint block at all
    logged = unavailable(caplog)
    assert len(logged) == 3
    assert {line.split()[2] for line in logged} == set(names)
