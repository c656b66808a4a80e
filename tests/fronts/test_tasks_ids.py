"""A task id from a client is checked before it reaches a file name or a store key: through a real client of the
in-process front, on both store backends and in both eras (2025-11-25 tasks, the 2026-07-28 tasks extension),
`tasks/get`, `tasks/result` (2025), `tasks/cancel` and `tasks/update` (2026) with an id the gateway never mints
(5,000 characters, `<real id>.json/x`, `../<real id>`) answer -32602 "No task" naming the id, cut, with no path
in the answer and no traceback in the log; the real task is untouched."""

import logging
from collections.abc import Iterator
from pathlib import Path

import anyio
import mcp.types as types
import pytest
from mcp import Client, MCPError
from mcp.client import advertise

from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.fronts.tasks_offer import EXTENSION
from tests.fronts.test_tasks import send, tasked
from tests.harness import write_config
from tests.services import RedisServer, redis_server

pytestmark = pytest.mark.anyio

ERAS = {
    "2025-11-25": ("tasks/get", "tasks/result", "tasks/cancel"),
    "2026-07-28": ("tasks/get", "tasks/cancel", "tasks/update"),
}


@pytest.fixture(scope="module")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with redis_server(tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("backend", ["local", "redis"])
async def test_an_id_the_gateway_never_minted_is_not_found_naming_it_cut_with_no_path_and_no_traceback(
    tmp_path: Path, request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture, backend: str, era: str
) -> None:
    store = {"backend": "redis", "url": request.getfixturevalue("redis").url} if backend == "redis" else {}
    state = tmp_path / "s"
    limits = {"task_after_s": 0}  # a 2026-era call becomes a task at once
    config = write_config(tmp_path, {"t": tasked()}, think={"state_dir": str(state)}, store=store, limits=limits)
    gateway, modern = Gateway(load_config(config)), era == "2026-07-28"
    extensions = [advertise(EXTENSION, {})] if modern else None
    with anyio.fail_after(60):
        async with (
            gateway.running(),
            Client(gateway.front.server, mode="auto" if modern else "legacy", extensions=extensions) as client,
        ):
            assert client.protocol_version == era
            call = {"name": "t.hold", "arguments": {"key": "k"}}
            answer = await send(client, "tools/call", call if modern else {**call, "task": {"ttl": 60_000}})
            real = (answer if modern else answer["task"])["taskId"]
            caplog.clear()
            for odd in ("x" * 5000, f"{real}.json/x", f"../{real}"):
                for method in ERAS[era]:
                    with pytest.raises(MCPError) as raised:
                        await send(client, method, {"taskId": odd})
                    error = raised.value.error
                    assert error.code == types.INVALID_PARAMS, (method, odd[:80], error)
                    assert error.message.startswith(f"No task {odd[:64]!r}"), error.message[:200]
                    assert len(error.message) < 400 and str(state) not in error.message and "Errno" not in error.message
            assert [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info] == []
            assert (await send(client, "tasks/get", {"taskId": real}))["status"] == "working"
            await send(client, "tools/call", {"name": "t.release", "arguments": {"key": "k"}})
