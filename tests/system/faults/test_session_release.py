"""Per-session state is released when a client session ends: 40 HTTP sessions opened and closed leave nothing, and
a resource only an ended session watched is left at its server."""

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import mcp.types as types
import pytest
import uvicorn

from gateway.app.gateway import Gateway
from gateway.app.listening import listening
from gateway.app.serve import http_app
from gateway.config import load_config
from gateway.downstreams.downstream import Downstream
from gateway.downstreams.pool import Pool
from gateway.fronts.auth.configured import authenticator
from tests.downstreams.relay.test_relay_url_schemes import RELAYING
from tests.harness import http_client, kitchen, text_of, wait_for, write_config

pytestmark = pytest.mark.anyio

CYCLES = 40


@asynccontextmanager
async def in_process(gateway: Gateway) -> AsyncIterator[str]:
    """The gateway served over HTTP in this process (its state can be looked at), as `gateway serve` would."""
    config = gateway.config
    app = http_app(gateway, authenticator(config.auth, config.listen))
    # Listening before uvicorn starts: the kernel queues connections, so the test can connect at once.
    with listening("127.0.0.1", 0) as sockets:
        server = uvicorn.Server(uvicorn.Config(app, log_config=None, lifespan="on"))
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, sockets)
            try:
                yield f"http://127.0.0.1:{sockets[0].getsockname()[1]}"
            finally:
                server.should_exit = True


async def test_handshake_era_http_sessions_leave_no_listener_or_session_behind_once_closed(tmp_path: Path) -> None:
    gateway = Gateway(load_config(write_config(tmp_path, {"k": kitchen("k")})))
    async with in_process(gateway) as base:
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


async def test_a_resource_only_an_ended_session_watched_is_left_at_its_server(tmp_path: Path) -> None:
    """Else the server keeps sending updates for nobody, and a per-user process never stops for being idle."""
    gateway = Gateway(load_config(write_config(tmp_path, {"c": RELAYING})))
    subscribe = types.SubscribeRequest(params=types.SubscribeRequestParams(uri="c+test://watched-resource"))
    server = gateway.registry.downstreams["c"]
    assert isinstance(server, Downstream)
    async with in_process(gateway) as base:
        with anyio.fail_after(30):
            async with http_client(base, mode="legacy") as client:  # the one subscriber, then gone without a word
                await client.session.send_request(subscribe, types.EmptyResult)
                assert server.watching
        gc.collect()
        assert not server.watching


async def test_a_users_process_whose_only_subscriber_left_stops_when_idle(tmp_path: Path) -> None:
    per_user = {**RELAYING, "env": {**RELAYING["env"], "X": "${user:X}"}, "pool": {"idle_s": 0.5}}
    config = write_config(
        tmp_path,
        {"p": per_user},
        auth={"tokens": [{"name": "ann", "token": "ann-token-0123456789"}]},
        secrets={"sources": ["header"]},
    )
    gateway = Gateway(load_config(config))
    pool = gateway.registry.downstreams["p"]
    assert isinstance(pool, Pool)
    subscribe = types.SubscribeRequest(params=types.SubscribeRequestParams(uri="p+test://watched-resource"))
    ann = {"authorization": "Bearer ann-token-0123456789", "x-gateway-secret-x": "ann-x"}
    async with in_process(gateway) as base:
        with anyio.fail_after(30):
            async with http_client(base, mode="legacy", headers=ann) as client:
                await client.session.send_request(subscribe, types.EmptyResult)  # starts ann's process
                assert pool.processes == 1
            gc.collect()
            await wait_for(lambda: pool.processes == 0, what="ann's idle process to stop")
