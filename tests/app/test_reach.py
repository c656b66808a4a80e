"""`gateway check --as IDENTITY` says per server whether that identity can reach it and why not
(`gateway.app.reach`), run as the command it is against a real config: a real authorization server and MCP server
(`tests/servers/guarded.py`), real stdio servers, a server that is down, and tokens signed in for real."""

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import anyio
import httpx2
import pytest
from cryptography.fernet import Fernet

from gateway.config import load_config
from gateway.downstreams.oauth import OAuth
from gateway.session import Identity
from gateway.store.local.tokens import LocalTokens
from tests.harness import ROOT, free_port, kitchen, write_config
from tests.idp import ISSUER
from tests.servers.guarded import serving

pytestmark = pytest.mark.anyio
GATEWAY = "http://127.0.0.1:9"
"""The gateway's public base while signing in here: the browser stops at the callback's redirect and hands it over."""


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving(tmp_path_factory.mktemp("guarded")) as base:
        yield base


async def sign_in(oauth: OAuth, identity: Identity) -> None:
    """What a person does through /connect: the authorization server approves them at once."""
    url, browser = await oauth.begin("forge", identity)
    assert url is not None
    async with httpx2.AsyncClient() as http:
        response = await http.get(f"{url}&login_hint={identity.name}")
    back = {k: v[0] for k, v in parse_qs(urlparse(response.headers["location"]).query).items()}
    await oauth.finish(back["state"], back["code"], None, browser)


async def test_check_as_says_per_server_whether_the_identity_can_reach_it_and_why_not(
    guarded: str, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    servers = {
        "k": kitchen("k"),
        "h": kitchen("h"),
        "dead": {"transport": "http", "url": f"http://127.0.0.1:{free_port()}/mcp", "connect_timeout_s": 5},
        "forge": {"transport": "http", "url": f"{guarded}/mcp", "auth": {"type": "oauth"}},
        "ex": {
            "transport": "http",
            "url": f"{guarded}/mcp",
            "auth": {"type": "token_exchange", "token_endpoint": f"{guarded}/token"},
        },
        "svc": {
            "transport": "http",
            "url": f"{guarded}/mcp",
            "auth": {"type": "client_credentials", "client_id": "gateway", "client_secret": "gateway-secret"}
            | {"issuer": guarded},
        },
        "badsvc": {
            "transport": "http",
            "url": f"{guarded}/mcp",
            "auth": {"type": "client_credentials", "client_id": "gateway", "client_secret": "wrong"}
            | {"issuer": guarded},
        },
    }
    auth = {
        "resource_url": "http://127.0.0.1/mcp",
        "jwt": {"issuer": ISSUER, "jwks_url": f"http://127.0.0.1:{free_port()}/jwks.json"},
        "tokens": [{"name": "ci-bot", "token": "ci-bot-token-0123456789"}],
    }
    policy = {"rules": [{"name": "interns", "groups": ["interns"], "deny": ["h.*"]}]}
    path = write_config(tmp_path, servers, auth=auth, policy=policy, think={"state_dir": str(state)})
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GATEWAY_TOKEN_KEY": Fernet.generate_key().decode()}

    # alice signs in to forge; carol too, with a token that has ended (a refresh token is kept); bob never does.
    config = load_config(path)
    os.environ["GATEWAY_TOKEN_KEY"] = env["GATEWAY_TOKEN_KEY"]
    try:
        async with OAuth(lambda: config.servers, LocalTokens(state / "tokens"), GATEWAY) as oauth:
            await sign_in(oauth, Identity("alice", "jwt", "alice", ISSUER))
            async with httpx2.AsyncClient() as http:
                await http.post(f"{guarded}/admin/ttl", params={"s": 30})  # within the 30 s margin: ended at once
            try:
                await sign_in(oauth, Identity("carol", "jwt", "carol", ISSUER))
            finally:
                async with httpx2.AsyncClient() as http:
                    await http.post(f"{guarded}/admin/ttl", params={"s": 3600})
    finally:
        del os.environ["GATEWAY_TOKEN_KEY"]

    said: dict[str, list[str]] = {}

    async def check_as(who: str, *more: str) -> None:
        argv = [sys.executable, "-m", "gateway", "check", "--config", str(path), "--as", who, *more]
        done = await anyio.run_process(argv, cwd=str(ROOT), env=env)
        lines = done.stdout.decode().splitlines()
        said[who] = lines[lines.index("servers:") + 1 :]

    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            tg.start_soon(check_as, "alice")
            tg.start_soon(check_as, "bob", "--groups", "interns")
            tg.start_soon(check_as, "carol")
            tg.start_soon(check_as, "ci-bot")
    alice, bob, carol, bot = said["alice"], said["bob"], said["carol"], said["ci-bot"]
    assert "  k: yes: up" in alice and "  h: yes: up" in alice
    denied = [line for line in bob if line.startswith("  h: no: the policy denies all ")]
    assert denied and denied[0].endswith(" of its tools (policy rule 'interns')"), "\n".join(bob)
    assert "  k: yes: up" in bob  # the rule is about h alone
    # Unreachable: "down", or "restarting" while the supervisor's next try is under way (the check reads a moment).
    assert [line for line in alice if line.startswith(("  dead: no: down (", "  dead: no: restarting ("))], alice
    assert [line for line in alice if line.startswith("  forge: yes: signed in (good for ")], alice
    assert "  forge: no: needs sign-in, and bob holds no token (`gateway login forge`, or a call's link)" in bob
    assert "  forge: yes: the token expired, and a refresh is available (the next call refreshes it)" in carol
    exchanged = f"  ex: yes, with a JWT: the caller's JWT is exchanged at {guarded}/token on their first call"
    assert exchanged in alice
    assert "  ex: no: token exchange needs the caller's JWT, and ci-bot is not a JWT caller (static)" in bot
    service = f"  svc: yes: as the service identity (client 'gateway' at {guarded}), the same for every caller"
    assert service in alice and service in bot
    refused = [line for line in bot if line.startswith("  badsvc: no: ")]  # down, or restarting after the refusal
    assert refused and "invalid_client" in refused[0], "\n".join(bot)
