"""The client matrix (issue 22, item 8): pinned real clients of each era, over stdio, Streamable HTTP and SSE, drive
one gateway with real downstream servers through every case (tests/clients/matrix.py); a failing case is re-run
directly against its downstream server, to show whether the failure is the gateway's.

The clients are installed by `scripts/client-matrix` (part of `scripts/setup-lab`) under `.clients/`. One driver
process per row runs all its cases; rows run a few at a time. The table is written to test-artifacts/client-matrix.md.
"""

import json
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.clients.matrix import (
    CASE_NAMES,
    CLIENTS,
    NODE,
    ROWS,
    WHO,
    Case,
    Named,
    Row,
    cases,
    direct,
    judge,
    refused_clearly,
    through_gateway,
)
from tests.harness import KITCHEN, PYTHON, ROOT, http_gateways, served, stop, write_config

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]  # the first row's test sets up the whole matrix

ARTEFACT = ROOT / "test-artifacts" / "client-matrix.md"
AT_ONCE = 4
"""Driver processes at a time: each stdio row also runs a gateway and its two servers, on a 2-core machine."""
ROW_S = 90
LANES = 3
"""HTTP gateways, each serving its share of the HTTP and SSE rows one row at a time."""
REMOTE = str(CLIENTS / "node" / "node_modules" / "mcp-remote" / "dist" / "proxy.js")
SERVERS: dict[str, list[str]] = {"k": [KITCHEN, "--name", "k"], "c": ["-m", "tests.servers.relaying"]}
LOCAL: dict[str, Any] = {"cwd": str(ROOT), "env": {"PYTHONPATH": str(ROOT)}}


@dataclass
class Outcome:
    row: Row
    negotiated: str = "?"
    failures: dict[str, str] = field(default_factory=dict[str, str])
    passed: list[str] = field(default_factory=list[str])
    unsupported: list[str] = field(default_factory=list[str])
    direct: dict[str, str] = field(default_factory=dict[str, str])
    """Per failed case: what the same client saw directly against the downstream server."""
    log: str = ""
    seconds: float = 0.0


async def run_driver(row: Row, target: dict[str, Any], chosen: list[Case], tmp: Path) -> tuple[dict[str, Any], str]:
    """One driver process running `chosen` against `target`: its header and observations, and its stderr's tail. A
    driver stuck past `ROW_S` is stopped: the cases it did not finish say so, the rest of the matrix goes on."""
    plan = {**row.plan, **target, "person": WHO, "cases": [{"name": c.name, "steps": c.steps} for c in chosen]}
    name = f"{row.id}-{uuid.uuid4().hex[:8]}"  # a row's id holds dots: no with_suffix
    given, said, logged = (tmp / f"{name}.{end}" for end in ("json", "out", "err"))
    given.write_text(json.dumps(plan), encoding="utf-8")
    with said.open("wb") as out, logged.open("wb") as err:
        process = await anyio.open_process([*row.driver, str(given)], stdout=out, stderr=err)
        with anyio.move_on_after(ROW_S) as waiting:
            await process.wait()
        await stop(process)
    seen: dict[str, Any] = {}
    for line in said.read_text(encoding="utf-8").splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            seen[entry.get("case", "header")] = entry.get("steps", entry)
    if waiting.cancelled_caught:
        stuck = [{"error": f"the client was stuck: its driver had not finished {ROW_S} s after it started"}]
        seen.update({c.name: stuck for c in chosen if c.name not in seen})
    return seen, logged.read_text(encoding="utf-8", errors="replace")[-1500:]


def bridged(row: Row, url: str, tmp: Path) -> dict[str, Any]:
    """The driver's target when a bridge stands between it and `url`: the bridge, on stdio."""
    how = "http-only" if row.transport == "http" else "sse-only"
    env = {"MCP_REMOTE_CONFIG_DIR": str(tmp / "mcp-remote")}
    return {"transport": "stdio", "command": NODE, "args": [REMOTE, url, "--transport", how], "env": env}


def target_of(row: Row, base: str | None, stdio: dict[str, Any], tmp: Path) -> dict[str, Any]:
    """Where `row`'s client connects: the stdio command, or `base`'s endpoint for its transport (maybe bridged)."""
    if row.transport == "stdio":
        return stdio
    assert base is not None
    url = f"{base}/mcp" if row.transport == "http" else f"{base}/sse"
    return bridged(row, url, tmp) if row.bridge else {"transport": row.transport, "url": url}


def verdicts(outcome: Outcome, seen: dict[str, Any], elicits: bool, n: Named) -> None:
    for case in cases(n):
        steps = seen.get(case.name, [])
        if case.needs_elicitation and not elicits:  # this client cannot answer an elicitation: it is told so
            wrong = refused_clearly(steps)
            if wrong is None:
                outcome.unsupported.append(case.name)
                continue
        else:
            wrong = judge(case, steps, outcome.negotiated, n, typescript=outcome.row.typescript)
        if wrong is None:
            outcome.passed.append(case.name)
        else:
            outcome.failures[case.name] = wrong


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module-scoped: the matrix runs once for all its rows


@pytest.fixture(scope="module")
async def matrix(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Outcome]]:
    missing = [p for p in (CLIENTS / "node", CLIENTS / "mcp-1.9.4", CLIENTS / "mcp-1.30.0") if not p.is_dir()]
    assert not missing, f"the matrix's clients are not installed ({missing}): run ./scripts/client-matrix"
    tmp = tmp_path_factory.mktemp("matrix")
    async with downstreams_over_http(tmp) as bases:
        # Every gateway reaches the same two servers over HTTP (a stdio row's gateway spawns no servers of its
        # own: the machine has 2 cores); `c` in the handshake era: it pushes its requests, whatever the client's.
        servers = {
            "k": {"transport": "http", "url": f"{bases['k']}/mcp"},
            "c": {"transport": "http", "url": f"{bases['c']}/mcp", "protocol": "legacy"},
        }
        config = write_config(tmp, servers, limits={"startup_wait_s": 60})  # a row lists at once: all servers up
        stdio = {"transport": "stdio", "command": PYTHON, **LOCAL}
        stdio["args"] = ["-m", "gateway", "serve", "--config", str(config), "--log-level", "WARNING"]
        outcomes = {row.id: Outcome(row) for row in ROWS}
        limiter = anyio.CapacityLimiter(AT_ONCE)
        async with http_gateways(*[config] * LANES) as gateway_urls:
            # Each HTTP gateway's rows take turns: its handshake-era server `c` cannot say which of two clients'
            # calls in flight its sampling request is for, and the gateway refuses to guess (relay.py).
            lanes = [(url, anyio.Lock()) for url in gateway_urls]
            http_rows = [row for row in ROWS if row.transport != "stdio"]

            async def one(row: Row) -> None:
                base, turn = lanes[http_rows.index(row) % LANES] if row in http_rows else (None, nullcontext())
                async with limiter, turn:
                    start = time.monotonic()
                    seen, log = await run_driver(row, target_of(row, base, stdio, tmp), cases(through_gateway), tmp)
                outcome = outcomes[row.id]
                header = seen.get("header", {})
                outcome.negotiated, outcome.log = header.get("negotiated") or "?", log
                outcome.seconds = time.monotonic() - start
                verdicts(outcome, seen, header.get("elicitation", True), through_gateway)

            async with anyio.create_task_group() as tg:
                for row in ROWS:
                    tg.start_soon(one, row)
        await rerun_directly([o for o in outcomes.values() if o.failures], bases, tmp)
    write_table(list(outcomes.values()))
    yield outcomes


async def rerun_directly(failed: list[Outcome], bases: dict[str, str], tmp: Path) -> None:
    """Each failed case again, the same client on the same transport, against the downstream server alone."""
    for outcome in failed:
        by_server: dict[str, list[Case]] = {}
        for case in cases(direct):
            if case.name in outcome.failures:
                by_server.setdefault(case.server or "", []).append(case)
        for server, chosen in by_server.items():
            if not server:
                outcome.direct.update({c.name: "none: the case is the gateway's own" for c in chosen})
                continue
            stdio = {"transport": "stdio", "command": PYTHON, "args": SERVERS[server], **LOCAL}
            seen, _ = await run_driver(outcome.row, target_of(outcome.row, bases[server], stdio, tmp), chosen, tmp)
            negotiated = seen.get("header", {}).get("negotiated") or "?"
            for case in chosen:
                wrong = judge(case, seen.get(case.name, []), negotiated, direct, typescript=outcome.row.typescript)
                outcome.direct[case.name] = "passes: the gateway's" if wrong is None else f"fails too: {wrong}"


@asynccontextmanager
async def downstreams_over_http(tmp: Path) -> AsyncIterator[dict[str, str]]:
    """The downstream servers on HTTP (Streamable HTTP at /mcp, legacy SSE at /sse), their base URLs by name."""
    bases: dict[str, str] = {}
    async with AsyncExitStack() as stack:
        for name, args in SERVERS.items():
            port_file = anyio.Path(tmp / f"{name}-{uuid.uuid4().hex[:8]}.port")
            transport = "http" if name == "k" else "sse"  # the relaying fixture serves /mcp beside /sse
            argv = [PYTHON, *args, "--transport", transport, "--port-file", str(port_file)]

            async def ready(port_file: anyio.Path = port_file) -> str | None:
                return f"http://127.0.0.1:{(await port_file.read_text()).strip()}" if await port_file.exists() else None

            bases[name] = await stack.enter_async_context(served(argv, ready, name, quiet=True, **LOCAL))
        yield bases


def write_table(outcomes: list[Outcome]) -> None:
    lines = [
        "# Client matrix",
        "",
        f"Cases: {', '.join(CASE_NAMES)}. n/a: the client cannot answer an elicitation at all (and is told so).",
        "",
        "| client | version | transport | negotiated | passed | failed | n/a | s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        mode = f" ({o.row.plan['mode']})" if "mode" in o.row.plan else ""
        transport = f"{o.row.transport} via {o.row.bridge}" if o.row.bridge else o.row.transport
        failed = ", ".join(o.failures) or "-"
        lines.append(
            f"| {o.row.client} | {o.row.version}{mode} | {transport} | {o.negotiated} | "
            f"{len(o.passed)}/{len(CASE_NAMES)} | {failed} | {', '.join(o.unsupported) or '-'} | {o.seconds:.1f} |"
        )
    details = [
        f"- {o.row.id} `{case}`: {why[:400]} -- directly: {o.direct.get(case, 'not re-run')}"
        for o in outcomes
        for case, why in o.failures.items()
    ]
    if details:
        lines += ["", "## Failures", "", *details]
    ARTEFACT.parent.mkdir(exist_ok=True)
    ARTEFACT.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
async def test_every_case_passes_for_this_client_on_this_transport(matrix: dict[str, Outcome], row: Row) -> None:
    outcome = matrix[row.id]
    assert outcome.negotiated == row.negotiates, f"negotiated {outcome.negotiated}; driver log:\n{outcome.log}"
    report = {case: f"{why} -- directly: {outcome.direct.get(case)}" for case, why in outcome.failures.items()}
    assert report == {}, f"driver log:\n{outcome.log}"
    assert len(outcome.passed) + len(outcome.unsupported) == len(CASE_NAMES)


async def test_typescript_clients_drop_progress_they_read_with_its_result(tmp_path: Path) -> None:
    """Why the progress case lets a TypeScript client miss steps: it drops what it reads in one chunk with the result
    (a peer's fault no more than a busy machine's), where a Python client hears every step. If a TypeScript SDK
    stops dropping them, this fails: then `judge` should stop allowing it."""
    server = {"transport": "stdio", "command": PYTHON, "args": ["-m", "tests.servers.one_write"], **LOCAL}
    step = {"op": "call", "tool": "slow", "arguments": {}}
    chosen = [Case("progress", "x", [step])]
    heard: dict[str, list[float]] = {}
    one_per_driver = {r.driver: r for r in reversed(ROWS) if r.transport == "stdio" and not r.bridge}

    async def hear(row: Row) -> None:
        seen, log = await run_driver(row, server, chosen, tmp_path)
        observed = seen.get("progress", [{}])[0]
        assert observed.get("result", {}).get("content", [{}])[0].get("text") == "slow done", (row.id, seen, log)
        heard[row.id] = observed["progress"]

    async with anyio.create_task_group() as tg:
        for row in one_per_driver.values():
            tg.start_soon(hear, row)
    assert {r: p for r, p in heard.items() if p} == {
        r.id: [1, 2, 3] for r in ROWS if r.id in heard and not r.typescript
    }
    assert sorted(heard) == sorted(r.id for r in one_per_driver.values()), heard
