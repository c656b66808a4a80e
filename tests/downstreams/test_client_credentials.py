"""A service identity on a downstream server (`gateway.downstreams.client_credentials`), against a real authorization
server and MCP server (`tests/servers/guarded.py`): one token for everyone, renewed before it ends, with the
configured scopes."""

from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import TypeAdapter

from gateway.app.servers import Servers
from gateway.config import SecretsConfig, ServerConfig
from gateway.downstreams import secrets
from gateway.downstreams.downstream import Downstream
from gateway.downstreams.relay import Relay
from tests.downstreams.oauth_harness import admin, ignored, who_answers
from tests.servers.guarded import serving

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving(tmp_path_factory.mktemp("guarded")) as base:
        yield base


def service(base: str, **more: Any) -> Downstream:
    """The one connection the gateway makes to a `client_credentials` server."""
    auth = {"type": "client_credentials", "client_id": "gateway", "client_secret": "gateway-secret", "issuer": base}
    config = TypeAdapter(ServerConfig).validate_python({"transport": "http", "url": f"{base}/mcp", "auth": auth | more})
    relay = Relay(logger_name=lambda server, name: server)
    env = secrets.from_config(SecretsConfig(sources=["env"]))
    built = Servers(relay, env, lambda: 1 << 20, lambda s, k, a=None: None, ignored)("svc", config)
    assert isinstance(built, Downstream)  # shared by everyone: not a pool
    return built


async def test_every_caller_shares_one_service_token(guarded: str) -> None:
    downstream = service(guarded)
    before = (await admin(guarded, "ttl", s=3600))["client_credentials"]
    async with downstream.running():
        await downstream.settled()
        assert await who_answers(downstream) == "service:gateway"
        assert await who_answers(downstream) == "service:gateway"
    assert (await admin(guarded, "ttl", s=3600))["client_credentials"] - before == 1


async def test_a_service_token_is_renewed_before_it_ends(guarded: str) -> None:
    downstream = service(guarded)
    await admin(guarded, "ttl", s=30)  # within the 30 s margin: each token counts as ended as soon as it is issued
    try:
        async with downstream.running():
            await downstream.settled()
            connected = (await admin(guarded, "ttl", s=30))["client_credentials"]
            assert await who_answers(downstream) == "service:gateway"  # the token of the connection is not sent again
            assert (await admin(guarded, "ttl", s=30))["client_credentials"] > connected
    finally:
        await admin(guarded, "ttl", s=3600)


async def test_the_configured_scopes_are_asked_for(guarded: str) -> None:
    downstream = service(guarded, scopes=["repo:read", "issues:write"])
    async with downstream.running():
        await downstream.settled()  # the server's 401 names no scope: the SDK alone would then ask for none
    assert (await admin(guarded, "ttl", s=3600))["last_scope"] == "repo:read issues:write"
