"""What the OAuth tests of `gateway.downstreams` share (`test_oauth*.py`): a real authorization server and MCP
server (`tests/servers/guarded.py`), people who sign in through it with a browser that stops at the callback, and
the per-identity pool their calls go out on. The fixtures over these are in `conftest.py`."""

import json
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx2
import mcp.types as types
from pydantic import TypeAdapter

from gateway.app.servers import Servers
from gateway.config import SecretsConfig, ServerConfig
from gateway.downstreams import secrets
from gateway.downstreams.downstream import Downstream
from gateway.downstreams.oauth import OAuth
from gateway.downstreams.pool import Pool
from gateway.downstreams.relay import Relay
from gateway.session import Identity
from tests.harness import text_of

ALICE = Identity("alice", "jwt", "s-alice", "https://idp.test")
BOB = Identity("bob", "jwt", "s-bob", "https://idp.test")
GATEWAY = "http://127.0.0.1:9"
"""The gateway's public base in these tests: the browser here stops at the callback's redirect and hands it over."""


def server(base: str) -> ServerConfig:
    config = {"transport": "http", "url": f"{base}/mcp", "auth": {"type": "oauth"}}
    return TypeAdapter(ServerConfig).validate_python(config)


async def admin(base: str, what: str, **query: Any) -> dict[str, Any]:
    """The authorization server's counts (and the scope last asked for without a browser), after `what`."""
    async with httpx2.AsyncClient() as http:
        response = await http.post(f"{base}/admin/{what}", params=query)
    counts: dict[str, Any] = response.json()
    return counts


async def browse(url: str, user: str) -> dict[str, str]:
    """What a person's browser does with the authorization URL: signs in as `user` (the server approves at once) and
    comes back with the callback's query."""
    async with httpx2.AsyncClient() as http:
        response = await http.get(f"{url}&login_hint={user}")
    assert response.status_code == 302, response.text
    back = urlparse(response.headers["location"])
    assert f"{back.scheme}://{back.netloc}{back.path}" == f"{GATEWAY}/oauth/callback"
    return {k: v[0] for k, v in parse_qs(back.query).items()}


async def sign_in(oauth: OAuth, identity: Identity) -> None:
    url, browser = await oauth.begin("forge", identity)
    assert url is not None
    back = await browse(url, identity.name)
    assert await oauth.finish(back["state"], back["code"], None, browser) == ("forge", identity)


async def whoami(pool: Pool, identity: Identity, tool: str = "whoami") -> str | None:
    async with pool.lease(identity, {}) as downstream:
        return await who_answers(downstream, tool)


async def who_answers(downstream: Downstream, tool: str = "whoami") -> str | None:
    """Whose token the server saw on a call through `downstream`."""
    result = await downstream.call_tool(tool, {})
    assert isinstance(result, types.CallToolResult) and not result.is_error, result
    user: str | None = json.loads(text_of(result))["user"]
    return user


def pool_of(oauth: OAuth, config: ServerConfig) -> Pool:
    relay = Relay(logger_name=lambda server, name: server)
    built = Servers(
        relay,
        secrets.from_config(SecretsConfig(sources=["env"])),
        lambda: 1 << 20,
        lambda s, k, a=None: None,
        ignored,
        oauth=oauth,
    )("forge", config)
    assert isinstance(built, Pool)
    return built


async def ignored(*_: object) -> None:
    return None
