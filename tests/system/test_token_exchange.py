"""A whole gateway acting as each caller without a browser: the JWT a caller presents at the HTTP front is exchanged
(RFC 8693) at a real authorization server (`tests/servers/guarded.py`, trusting the identity provider of
`tests/idp.py`) for a token for the downstream server; a service server gets one client-credentials token for all."""

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import anyio
import httpx2
import mcp.types as types
import pytest
from cryptography.fernet import Fernet

from tests.harness import PYTHON, ROOT, free_port, http_client, stop, text_of, wait_for, write_config
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
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GATEWAY_TOKEN_KEY": Fernet.generate_key().decode()}
    env["GUARDED_SECRET"] = "gateway-secret"
    base = f"http://127.0.0.1:{free_port()}"
    argv = [PYTHON, "-m", "gateway", "serve", "--config", str(config), "--http", base[7:], "--log-level", "DEBUG"]
    log = tmp_path / "gateway.log"
    jwts = {person: idp.token(person) for person in ("alice", "bob")}
    with anyio.fail_after(90), log.open("wb") as out:
        process = await anyio.open_process(argv, stdout=out, stderr=subprocess.STDOUT, cwd=str(ROOT), env=env)
        try:
            await wait_for(lambda: b"serving http" in log.read_bytes(), what="the gateway serving")
            async with httpx2.AsyncClient(timeout=2) as http:  # uvicorn binds after that line
                while True:
                    with suppress(httpx2.HTTPError):
                        if (await http.get(f"{base}/healthz")).status_code == 200:
                            break
                    await anyio.sleep(0.05)  # another process's socket offers no event to wait on
            async with http_client(base, headers=bearer(BOT)) as bot:
                refused = await bot.call_tool("forge.whoami", {})
                assert refused.is_error and "carries no" in answer(refused), answer(refused)
                assert "bearer JWT" in answer(refused) and "ci-bot called with a static token" in answer(refused)
                assert json.loads(text_of(await bot.call_tool("svc.whoami", {}))) == {"user": "service:gateway"}
            for person, jwt in jwts.items():
                async with http_client(base, headers=bearer(jwt)) as client:
                    assert json.loads(text_of(await client.call_tool("forge.whoami", {}))) == {"user": person}
                    assert json.loads(text_of(await client.call_tool("svc.whoami", {}))) == {"user": "service:gateway"}
            async with httpx2.AsyncClient() as http:
                issued = (await http.post(f"{guarded}/admin/issued")).json()
        finally:
            await stop(process)
    # Nothing the gateway holds for a caller reaches its log, even at DEBUG: neither their JWT nor what it became.
    written = log.read_text()
    assert " DEBUG " in written and len(issued) >= 3  # alice's, bob's and the service's tokens at least
    held = {f"{person}'s JWT": jwt for person, jwt in jwts.items()} | {"the client secret": "gateway-secret"}
    held |= {f"issued token {i}": token for i, token in enumerate(issued)}
    for what, value in held.items():
        assert value not in written, f"{what} appears in the log"
