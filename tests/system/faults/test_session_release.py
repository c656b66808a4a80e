"""Per-session state is released when a client session ends: 40 HTTP sessions opened and closed leave nothing."""

import gc
from pathlib import Path

import anyio
import pytest
import uvicorn

from gateway.app.gateway import Gateway
from gateway.app.serve import http_app
from gateway.config import load_config
from gateway.fronts.auth.configured import authenticator
from tests.harness import free_port, http_client, kitchen, text_of, write_config

pytestmark = pytest.mark.anyio

CYCLES = 40


async def test_handshake_era_http_sessions_leave_no_listener_or_session_behind_once_closed(tmp_path: Path) -> None:
    gateway = Gateway(load_config(write_config(tmp_path, {"k": kitchen("k")})))
    config = gateway.config
    app = http_app(gateway, authenticator(config.auth, config.listen))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, lifespan="on"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(30):
            while not server.started:  # noqa: ASYNC110 -- uvicorn offers no event for "listening"
                await anyio.sleep(0.02)
        base = f"http://127.0.0.1:{port}"
        for i in range(CYCLES):
            async with http_client(base, mode="legacy") as client:  # initialize, initialized, call; DELETE on exit
                assert text_of(await client.call_tool("k.echo", {"text": str(i)})) == str(i)
        async with http_client(base, mode="legacy") as client:
            await client.call_tool("k.echo", {"text": "open"})
            gc.collect()
            # The open session is the only one remembered.
            assert gateway.front.notify.count() == 1
            assert len(gateway.sessions) == 1
        gc.collect()
        # At most the last caller of server k stays: the relay keeps it for the server's trailing log lines
        # until the next call there (one per server, never one per session).
        assert gateway.front.notify.count() <= 1
        assert len(gateway.sessions) <= 1
        server.should_exit = True
