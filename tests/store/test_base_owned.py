"""What a person creates is theirs on both backends (DESIGN §16): through a real HTTP gateway with two static tokens,
bob reaches none of alice's Think runs (listing, reading, advancing, explaining, debugging, resetting, "the
latest run") nor her stored outputs (tool and resource), and is told exactly what a name never used tells him.
The Redis backend leaves nothing on local disk; runs stored before runs had owners stay the local user's."""

import json
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
import uvicorn
from mcp import Client, MCPError

from gateway.app.gateway import Gateway
from gateway.app.serve import http_app
from gateway.config import load_config
from gateway.fronts.auth.configured import authenticator
from gateway.session import OWNER_META_KEY, Identity, os_user
from gateway.store.base import owned
from tests.harness import http_client, text_of, write_config
from tests.servers.kitchen import Kitchen
from tests.services import RedisServer
from tests.store.conftest import Backend
from tests.think.harness import FIXTURES

pytestmark = pytest.mark.anyio

ALICE, BOB = "alice-token-0123456789", "bob-token-0123456789ab"
SINK = {"workflow": "sink_v1", "run_id": "r1"}
DRIVER = {"version": "stable-2025-11", "text": "the driver"}
FORGED: Any = {OWNER_META_KEY: Identity("alice", "static", "alice").owner}
"""What bob would send to pass as alice: a client's `_meta` never reaches the gateway's own servers."""


class _Uvicorn(uvicorn.Server):
    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = anyio.Event()

    async def startup(self, sockets: list[Any] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self.ready.set()


def config_of(folder: Path, store: dict[str, Any], *, tokens: bool = True) -> Path:
    auth = {"tokens": [{"name": "alice", "token": ALICE}, {"name": "bob", "token": BOB}]} if tokens else {}
    think = {"workflows_dirs": [str(FIXTURES)], "state_dir": str(folder / "state")}
    return write_config(folder, {}, auth=auth, store=store, think=think, limits={"outputs_dir": str(folder / "out")})


def store_of(backend: Backend) -> dict[str, Any]:
    return {"backend": "redis", "url": backend.url, "prefix": backend.prefix} if backend.name == "redis" else {}


@asynccontextmanager
async def serving(config: Path) -> AsyncIterator[tuple[Gateway, str]]:
    """The gateway of `config` (with an in-process kitchen as `k`) behind its real HTTP front; yields its base URL."""
    gateway = Gateway(load_config(config), in_process={"k": lambda: Kitchen("k", None, 0, []).server})
    app = http_app(gateway, authenticator(gateway.config.auth, gateway.config.listen))
    server = _Uvicorn(uvicorn.Config(app, host="127.0.0.1", port=0, log_config=None, lifespan="on"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(30):
            await server.ready.wait()
        port = server.servers[0].sockets[0].getsockname()[1]
        try:
            yield gateway, f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True


def as_(base: str, token: str | None) -> Any:
    return http_client(base, headers={"authorization": f"Bearer {token}"} if token else None)


async def think(client: Client, tool: str, meta: Any = None, **arguments: Any) -> dict[str, Any]:
    """A Think tool's answer: its body, or its error body."""
    result = await client.call_tool(f"think.{tool}", arguments, meta=meta)
    body: dict[str, Any] = json.loads(text_of(result))
    assert result.is_error == ("error" in body), body
    return body


def unknown(body: dict[str, Any], run_id: str) -> None:
    """The answer for a run that does not exist: the same for another's run as for a name never used."""
    assert body == {
        "error": "UNKNOWN_RUN",
        "details": f"no run {run_id!r} of workflow 'sink_v1'",
        "guidance": "Call think.state.list to see the runs, or think.plan to start one.",
    }


async def test_another_identity_finds_none_of_a_think_run_it_did_not_plan(backend: Backend) -> None:
    async with serving(config_of(backend.folder, store_of(backend))) as (_, base):
        async with as_(base, ALICE) as alice, as_(base, BOB) as bob:
            planned = await think(alice, "plan", **SINK, params={"label": "alice's secret"})
            assert planned["step_id"] == "__driver_bootstrap"
            assert (await think(bob, "state.list", workflow="sink_v1"))["runs"] == []
            assert (await think(bob, "state.list", FORGED, workflow="sink_v1"))["runs"] == []
            unknown(await think(bob, "state.get", FORGED, **SINK), "r1")
            for run_id in ("r1", "never-planned"):  # hers and nobody's: one answer
                step = {"workflow": "sink_v1", "run_id": run_id}
                unknown(await think(bob, "state.get", **step), run_id)
                unknown(await think(bob, "next", **step, step_id="__driver_bootstrap", result_snapshot=DRIVER), run_id)
                unknown(await think(bob, "explain", **step), run_id)
                unknown(await think(bob, "debug", **step), run_id)
                unknown(await think(bob, "reset", **step, force=True), run_id)
            # "the latest active run" is his own latest: he has none
            latest = await think(bob, "next", workflow="sink_v1", step_id="__driver_bootstrap", result_snapshot=DRIVER)
            assert latest["error"] == "UNKNOWN_RUN" and "no active run of 'sink_v1'" in latest["details"]
            assert "run_id" not in await think(bob, "explain", workflow="sink_v1")  # the graph, no run's statuses
            # the same id planned by bob is his own run, and hers stays as it was
            theirs = await think(bob, "plan", **SINK, params={"label": "bob's"})
            assert theirs["run_id"] == "r1" and "note" not in theirs  # new, not "existing run"
            await think(bob, "next", **SINK, step_id="__driver_bootstrap", result_snapshot=DRIVER)
            await think(bob, "reset", **SINK, force=True)
            mine = await think(alice, "state.get", **SINK)
            assert mine["state"]["params"]["label"] == "alice's secret" and mine["progress"]["done"] == 0
            assert (
                await think(alice, "next", step_id="__driver_bootstrap", result_snapshot=DRIVER, workflow="sink_v1")
            )["step_id"] == "__driver_announce"  # her latest run, still hers to advance
            assert [r["run_id"] for r in (await think(alice, "state.list", workflow="sink_v1"))["runs"]] == ["r1"]


async def test_another_identity_cannot_read_a_stored_output_by_its_id(backend: Backend) -> None:
    async with serving(config_of(backend.folder, store_of(backend))) as (_, base):
        async with as_(base, ALICE) as alice, as_(base, BOB) as bob:
            big = await alice.call_tool("k.blob", {"n": 60_000, "char": "a"})
            [link] = [b for b in big.content if isinstance(b, types.ResourceLink)]
            output_id = str(link.uri).rsplit("/", 1)[1]
            page = await alice.call_tool("gateway.read_output", {"id": output_id, "length": 10})
            assert not page.is_error and text_of(page).endswith("a" * 10)
            [content] = (await alice.read_resource(str(link.uri))).contents
            assert isinstance(content, types.TextResourceContents) and "aaaa" in content.text
            for asked in (output_id, "f" * 24):  # hers and nobody's: one answer
                read = await bob.call_tool("gateway.read_output", {"id": asked}, meta=FORGED)
                assert read.is_error and text_of(read).startswith(f"No stored output {asked!r}.")
                with pytest.raises(MCPError, match=f"No stored output {asked!r}"):
                    await bob.read_resource(f"gateway://outputs/{asked}", meta=FORGED)


async def test_the_redis_backend_leaves_nothing_on_local_disk(redis: RedisServer, tmp_path: Path) -> None:
    backend = Backend("redis", redis.url, "n:", tmp_path)
    async with serving(config_of(backend.folder, store_of(backend))) as (_, base), as_(base, ALICE) as alice:
        await think(alice, "plan", **SINK, params={"label": "x"})
        await think(alice, "next", **SINK, step_id="__driver_bootstrap", result_snapshot=DRIVER)
        await think(alice, "reset", **SINK, force=True)
        await alice.call_tool("k.blob", {"n": 60_000})
    assert sorted(p.name for p in backend.folder.iterdir()) == ["gateway.yaml"]


async def test_runs_stored_before_owners_are_adopted_by_the_local_user_and_no_one_else(tmp_path: Path) -> None:
    """The old layout (`<state_dir>/<workflow>/<run>.json`, spills and lock in `<run>.files/`) is the stdio user's
    (or anonymous HTTP's), moved whole into their folder at first touch; a token's identity never sees it."""
    config = config_of(tmp_path, {})
    state, mine = tmp_path / "state", owned(os_user().owner, "sink_v1")
    async with serving(config) as (gateway, _), Client(gateway.front.server, mode="legacy") as local:
        await think(local, "plan", **SINK, params={"label": "old"})
    (state / mine).rename(state / "sink_v1")  # what the gateway wrote before runs had owners
    anonymous = tmp_path / "anonymous"
    shutil.copytree(state, anonymous / "state")
    async with serving(config) as (gateway, base):
        async with as_(base, BOB) as bob:
            assert (await think(bob, "state.list", workflow="sink_v1"))["runs"] == []
            unknown(await think(bob, "state.get", **SINK), "r1")
        assert [p.name for p in state.iterdir()] == ["sink_v1"]  # not adopted by bob
        async with Client(gateway.front.server, mode="legacy") as local:  # the stdio front's user
            assert [r["run_id"] for r in (await think(local, "state.list", workflow="sink_v1"))["runs"]] == ["r1"]
            answer = await think(
                local, "next", workflow="sink_v1", step_id="__driver_bootstrap", result_snapshot=DRIVER
            )
            assert answer["step_id"] == "__driver_announce"
    assert [p.name for p in state.iterdir()] == [mine]
    async with serving(config_of(anonymous, {}, tokens=False)) as (_, base), as_(base, None) as someone:
        assert (await think(someone, "state.get", **SINK))["state"]["params"] == {"label": "old", "rounds": 1}
