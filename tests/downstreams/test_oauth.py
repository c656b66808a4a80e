"""Acting as the person on an OAuth-protected server (`gateway.downstreams.oauth`), against a real authorization
server and MCP server (`tests/servers/guarded.py`): each identity signs in, its per-identity connection carries its
token alone, tokens are sealed at rest, and concurrent first calls share one refresh."""

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import anyio
import httpx2
import mcp.types as types
import pytest
from cryptography.fernet import Fernet
from pydantic import TypeAdapter

from gateway.app.servers import Servers
from gateway.config import SecretsConfig, ServerConfig
from gateway.downstreams import secrets
from gateway.downstreams.oauth import OAuth
from gateway.downstreams.oauth_providers import SignInNeeded, SignInRefused
from gateway.downstreams.oauth_tokens import token_key
from gateway.downstreams.pool import Pool
from gateway.downstreams.relay import Relay
from gateway.errors import DownstreamUnavailable
from gateway.session import Identity
from gateway.store.backends import open_stores
from gateway.store.local.tokens import LocalTokens
from tests.harness import text_of
from tests.servers.guarded import serving
from tests.services import redis_server, store_config

pytestmark = pytest.mark.anyio
ALICE = Identity("alice", "jwt", "s-alice", "https://idp.test")
BOB = Identity("bob", "jwt", "s-bob", "https://idp.test")
GATEWAY = "http://127.0.0.1:9"
"""The gateway's public base in these tests: the browser here stops at the callback's redirect and hands it over."""


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving(tmp_path_factory.mktemp("guarded")) as base:
        yield base


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    value = Fernet.generate_key().decode()
    monkeypatch.setenv("GATEWAY_TOKEN_KEY", value)
    return value


def server(base: str) -> ServerConfig:
    config = {"transport": "http", "url": f"{base}/mcp", "auth": {"type": "oauth"}}
    return TypeAdapter(ServerConfig).validate_python(config)


async def admin(base: str, what: str, **query: Any) -> dict[str, int]:
    async with httpx2.AsyncClient() as http:
        response = await http.post(f"{base}/admin/{what}", params=query)
    counts: dict[str, int] = response.json()
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
        result = await downstream.call_tool(tool, {})
    assert isinstance(result, types.CallToolResult) and not result.is_error
    user: str | None = json.loads(text_of(result))["user"]
    return user


def pool_of(oauth: OAuth, config: ServerConfig) -> Pool:
    relay = Relay(logger_name=lambda server, name: server)
    built = Servers(
        relay,
        secrets.from_config(SecretsConfig(sources=["env"])),
        lambda: 1 << 20,
        lambda s, k, a=None: None,
        _ignored,
        oauth=oauth,
    )("forge", config)
    assert isinstance(built, Pool)
    return built


@pytest.fixture
async def running(guarded: str, key: str, tmp_path: Path) -> AsyncIterator[tuple[OAuth, Pool, LocalTokens]]:
    store = LocalTokens(tmp_path / "tokens")
    config = server(guarded)
    async with OAuth(lambda: {"forge": config}, store, GATEWAY) as oauth, pool_of(oauth, config).running() as pool:
        yield oauth, pool, store


async def _ignored(*_: object) -> None:
    return None


async def test_each_person_calls_with_their_own_token_and_one_not_signed_in_is_told_where_to_sign_in(
    running: tuple[OAuth, Pool, LocalTokens], key: str
) -> None:
    oauth, pool, store = running
    with anyio.fail_after(60):
        await sign_in(oauth, ALICE)
        assert await whoami(pool, ALICE) == "alice"
        with pytest.raises(SignInNeeded) as needed:
            await whoami(pool, BOB)
        assert f"Sign in to forge: {GATEWAY}/connect/forge?ticket=" in str(needed.value)
        ticket = urlparse(needed.value.url or "").query.removeprefix("ticket=")
        assert await oauth.redeem("forge", ticket) == BOB
        assert await oauth.redeem("forge", ticket) is None  # once
        assert pool.processes == 1  # bob got no connection, so never alice's
        await sign_in(oauth, BOB)
        assert (await whoami(pool, BOB), await whoami(pool, ALICE)) == ("bob", "alice")
    sealed = (store.folder / token_key(ALICE, "forge")).read_bytes()
    tokens = await oauth.storage("forge", ALICE).get_tokens()
    assert tokens is not None and tokens.access_token.encode() not in sealed
    assert b"access_token" not in sealed and Fernet(key.encode()).decrypt(sealed)  # sealed, with the configured key


async def test_a_callback_from_another_browser_is_refused_and_leaves_the_sign_in_to_its_owner(
    running: tuple[OAuth, Pool, LocalTokens],
) -> None:
    oauth, pool, _ = running
    with anyio.fail_after(60):
        url, browser = await oauth.begin("forge", ALICE)
        _, bobs = await oauth.begin("forge", BOB)
        assert url is not None
        back = await browse(url, "alice")
        for other in (bobs, None):
            with pytest.raises(SignInRefused, match="started by someone else"):
                await oauth.finish(back["state"], back["code"], None, other)
        assert await oauth.finish(back["state"], back["code"], None, browser) == ("forge", ALICE)
        with pytest.raises(SignInRefused, match="used already"):  # single-use
            await oauth.finish(back["state"], back["code"], None, browser)
        assert await whoami(pool, ALICE) == "alice"


async def test_a_newer_sign_in_of_the_same_person_ends_the_older_one(running: tuple[OAuth, Pool, LocalTokens]) -> None:
    oauth, pool, _ = running
    with anyio.fail_after(60):
        older, older_browser = await oauth.begin("forge", ALICE)
        newer, newer_browser = await oauth.begin("forge", ALICE)
        assert older is not None and newer is not None
        stale, fresh = await browse(older, "alice"), await browse(newer, "alice")
        with pytest.raises(SignInRefused, match="used already or has expired"):
            await oauth.finish(stale["state"], stale["code"], None, older_browser)
        assert await oauth.finish(fresh["state"], fresh["code"], None, newer_browser) == ("forge", ALICE)
        assert await whoami(pool, ALICE) == "alice"


async def test_fifty_concurrent_first_calls_with_an_expired_token_make_one_refresh(
    running: tuple[OAuth, Pool, LocalTokens], guarded: str
) -> None:
    oauth, pool, _ = running
    with anyio.fail_after(60):
        await admin(guarded, "ttl", s=0)  # the token alice signs in with has expired already
        try:
            await sign_in(oauth, ALICE)
        finally:
            before = await admin(guarded, "ttl", s=3600)
        users: list[str | None] = []

        async def call() -> None:
            users.append(await whoami(pool, ALICE))

        async with anyio.create_task_group() as tg:
            for _ in range(50):
                tg.start_soon(call)
        after = await admin(guarded, "ttl", s=3600)
    assert users == ["alice"] * 50
    assert after["refreshes"] - before["refreshes"] == 1


async def test_a_revoked_grant_is_forgotten_and_the_next_call_asks_to_sign_in_again(
    running: tuple[OAuth, Pool, LocalTokens], guarded: str
) -> None:
    oauth, pool, store = running
    with anyio.fail_after(60):
        await admin(guarded, "ttl", s=0)
        try:
            await sign_in(oauth, BOB)
        finally:
            await admin(guarded, "ttl", s=3600)
        await admin(guarded, "revoke", user="bob")  # its refresh token is no good now
        with pytest.raises(DownstreamUnavailable, match="Sign in to forge"):  # the connection's attempt says why
            await whoami(pool, BOB)
        assert not (store.folder / token_key(BOB, "forge")).exists()
        with pytest.raises(SignInNeeded):
            await whoami(pool, BOB)


async def test_a_token_the_server_ended_early_is_refreshed_not_signed_in_again(
    running: tuple[OAuth, Pool, LocalTokens], guarded: str
) -> None:
    oauth, pool, _ = running
    with anyio.fail_after(60):
        await sign_in(oauth, ALICE)
        assert await whoami(pool, ALICE) == "alice"  # her connection is up, with a token that looks good for an hour
        before = await admin(guarded, "end-access", user="alice")  # the server answers it 401 from now
        assert await whoami(pool, ALICE) == "alice"
        after = await admin(guarded, "ttl", s=3600)
    assert after["refreshes"] - before["refreshes"] == 1
    assert after["authorizations"] == before["authorizations"]  # nobody was sent to sign in


async def test_a_step_up_asks_the_person_for_the_wider_scope_and_keeps_the_narrower_grant_until_then(
    running: tuple[OAuth, Pool, LocalTokens], guarded: str
) -> None:
    oauth, pool, _ = running
    with anyio.fail_after(60):
        await sign_in(oauth, ALICE)
        before = await admin(guarded, "ttl", s=3600)
        with pytest.raises(SignInNeeded) as needed:  # `vault` wants scope admin: 403 insufficient_scope
            await whoami(pool, ALICE, "vault")
        assert needed.value.url is not None and "?ticket=" in needed.value.url
        assert await whoami(pool, ALICE) == "alice"  # the grant she has still serves what it covers
        url, browser = await oauth.begin("forge", ALICE)  # through the link: a sign-in for the wider scope
        assert url is not None and "admin" in parse_qs(urlparse(url).query)["scope"][0].split()
        assert await whoami(pool, ALICE) == "alice"  # not lost before the new grant exists
        back = await browse(url, "alice")
        assert await oauth.finish(back["state"], back["code"], None, browser) == ("forge", ALICE)
        assert (await whoami(pool, ALICE, "vault"), await whoami(pool, ALICE)) == ("alice", "alice")
        after = await admin(guarded, "ttl", s=3600)
    assert after["authorizations"] - before["authorizations"] == 1


async def test_a_sign_in_on_one_replica_serves_calls_through_another_over_redis(
    guarded: str, key: str, tmp_path: Path
) -> None:
    config = server(guarded)
    with redis_server(tmp_path / "redis") as redis:
        one, two = (open_stores(store_config("redis", redis.url, "oauth:", tmp_path / n)) for n in ("one", "two"))
        try:
            with anyio.fail_after(60):
                async with OAuth(lambda: {"forge": config}, one.tokens, GATEWAY) as first:
                    await sign_in(first, ALICE)
                async with (
                    OAuth(lambda: {"forge": config}, two.tokens, GATEWAY) as second,
                    pool_of(second, config).running() as pool,
                ):
                    assert await whoami(pool, ALICE) == "alice"
                    with pytest.raises(SignInNeeded):
                        await whoami(pool, BOB)
            raw = await one.redis.get(f"oauth:token:{token_key(ALICE, 'forge')}")
            assert raw is not None and b"access_token" not in raw  # sealed there too
        finally:
            await one.aclose()
            await two.aclose()


async def test_a_sign_in_begun_on_one_replica_is_finished_by_another_over_redis(
    guarded: str, key: str, tmp_path: Path
) -> None:
    config = server(guarded)
    with redis_server(tmp_path / "redis") as redis:
        one, two = (open_stores(store_config("redis", redis.url, "oauth:", tmp_path / n)) for n in ("one", "two"))
        try:
            with anyio.fail_after(60):
                async with (
                    OAuth(lambda: {"forge": config}, one.tokens, GATEWAY, one.signins) as first,
                    OAuth(lambda: {"forge": config}, two.tokens, GATEWAY, two.signins) as second,
                    pool_of(second, config).running() as pool,
                ):
                    with pytest.raises(SignInNeeded) as needed:
                        await first.admit("forge", ALICE)
                    ticket = urlparse(needed.value.url or "").query.removeprefix("ticket=")
                    assert await second.redeem("forge", ticket) == ALICE  # the link opens on another replica
                    assert await first.redeem("forge", ticket) is None  # once, on all of them
                    url, browser = await first.begin("forge", ALICE)
                    assert url is not None
                    back = await browse(url, "alice")
                    with pytest.raises(SignInRefused, match="started by someone else"):
                        await second.finish(back["state"], back["code"], None, "another-browser")
                    assert await second.finish(back["state"], back["code"], None, browser) == ("forge", ALICE)
                    with pytest.raises(SignInRefused, match="used already"):
                        await first.finish(back["state"], back["code"], None, browser)
                    assert await whoami(pool, ALICE) == "alice"
            keys = [k.decode() async for k in one.redis.scan_iter("oauth:*")]
            state = back["state"]
            assert not any(state in k or ticket in k for k in keys), keys  # stored under digests only
        finally:
            await one.aclose()
            await two.aclose()
