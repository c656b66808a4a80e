"""A whole gateway acting as each caller without a browser: the JWT a caller presents at the HTTP front is exchanged
(RFC 8693) at a real authorization server (`tests/servers/guarded.py`, trusting the identity provider of
`tests/idp.py`) for a token for the downstream server; a service server gets one client-credentials token for all."""

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import mcp.types as types
import pytest
from cryptography.fernet import Fernet

from tests.harness import http_client, http_gateway, text_of, write_config
from tests.idp import AUDIENCE, ISSUER, IdentityProvider
from tests.idp import serving as serving_idp
from tests.servers.guarded import serving

pytestmark = pytest.mark.anyio
BOT = "ci-bot-token-0123456789"


@pytest.fixture(scope="module")
def idp() -> Iterator[IdentityProvider]:
    with serving_idp(IdentityProvider()) as provider:
        yield provider


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory, idp: IdentityProvider) -> Iterator[str]:
    trust = ("--jwks", idp.jwks_url, "--jwt-issuer", ISSUER, "--jwt-audience", AUDIENCE)
    with serving(tmp_path_factory.mktemp("guarded"), *trust) as base:
        yield base


def answer(result: types.CallToolResult) -> str:
    """All the text of a result, the gateway's own words too."""
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def test_each_jwt_caller_reaches_the_server_as_themselves_and_a_static_token_caller_is_told_why_not(
    guarded: str, idp: IdentityProvider, tmp_path: Path
) -> None:
    credentials = {"client_id": "gateway", "client_secret": "${GUARDED_SECRET}"}
    servers = {
        "forge": {
            "transport": "http",
            "url": f"{guarded}/mcp",
            "auth": {"type": "token_exchange", "token_endpoint": f"{guarded}/token", **credentials},
        },
        "svc": {
            "transport": "http",
            "url": f"{guarded}/mcp",
            "auth": {"type": "client_credentials", "issuer": guarded, **credentials},
        },
    }
    auth = {
        "resource_url": AUDIENCE,
        "jwt": {"issuer": ISSUER, "jwks_url": idp.jwks_url},
        "tokens": [{"name": "ci-bot", "token": BOT}],
    }
    config = write_config(tmp_path, servers, auth=auth, think={"state_dir": str(tmp_path / "state")})
    env = {"GATEWAY_TOKEN_KEY": Fernet.generate_key().decode(), "GUARDED_SECRET": "gateway-secret"}
    with anyio.fail_after(90):
        async with http_gateway(config, env=env) as base:
            async with http_client(base, headers=bearer(BOT)) as bot:
                refused = await bot.call_tool("forge.whoami", {})
                assert refused.is_error and "carries no" in answer(refused), answer(refused)
                assert "bearer JWT" in answer(refused) and "ci-bot called with a static token" in answer(refused)
                assert json.loads(text_of(await bot.call_tool("svc.whoami", {}))) == {"user": "service:gateway"}
            for person in ("alice", "bob"):
                async with http_client(base, headers=bearer(idp.token(person))) as client:
                    assert json.loads(text_of(await client.call_tool("forge.whoami", {}))) == {"user": person}
                    assert json.loads(text_of(await client.call_tool("svc.whoami", {}))) == {"user": "service:gateway"}
