"""A connection's side of OAuth (`gateway.downstreams.oauth_providers`), against a real authorization server and MCP
server (`tests/servers/guarded.py`): each identity's tokens, sealed in the shared store, serve its calls through any
replica, and a grant that stopped working is forgotten, so the call that met it asks the person to sign in again. A
client the config names is built once and each connection is handed a copy of its own."""

from pathlib import Path

import anyio
import pytest
from pydantic import TypeAdapter

from gateway.config import ServerConfig
from gateway.downstreams.oauth import OAuth
from gateway.downstreams.oauth_providers import SignInNeeded
from gateway.downstreams.oauth_tokens import token_key
from gateway.downstreams.pool import Pool
from gateway.store.backends import open_stores
from gateway.store.local.tokens import LocalTokens
from tests.downstreams.oauth_harness import ALICE, BOB, GATEWAY, admin, pool_of, server, sign_in, whoami
from tests.services import redis_server, store_config

pytestmark = pytest.mark.anyio


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
        with pytest.raises(SignInNeeded) as first:  # the connection's attempt forgot the grant: this call says so
            await whoami(pool, BOB)
        assert first.value.url is not None and "?ticket=" in first.value.url
        assert not (store.folder / token_key(BOB, "forge")).exists()
        with pytest.raises(SignInNeeded):
            await whoami(pool, BOB)


async def test_a_grant_revoked_while_connected_makes_that_call_ask_to_sign_in_not_fail_as_closed(
    running: tuple[OAuth, Pool, LocalTokens], guarded: str
) -> None:
    # An authorization server that moved or ended the grant answers the connection's next request 401; the connection
    # forgets the grant and closes, and the call that met it must hand out a sign-in link, not "Connection closed".
    oauth, pool, store = running
    with anyio.fail_after(60):
        await sign_in(oauth, ALICE)
        assert await whoami(pool, ALICE) == "alice"  # her connection is up
        await admin(guarded, "revoke", user="alice")  # access and refresh tokens: no good now
        with pytest.raises(SignInNeeded) as needed:
            await whoami(pool, ALICE)
    assert needed.value.url is not None and "?ticket=" in needed.value.url
    assert not (store.folder / token_key(ALICE, "forge")).exists()


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


async def test_a_configured_client_is_handed_to_each_connection_as_a_copy_of_its_own(key: str, tmp_path: Path) -> None:
    # Built once per value (`storage` runs on every call): the SDK keeps what it is handed, so none may share it.
    auth = {"type": "oauth", "client_id": "gw", "client_secret": "s3"}
    config = TypeAdapter(ServerConfig).validate_python(
        {"transport": "http", "url": "http://127.0.0.1:9/mcp", "auth": auth}
    )
    oauth = OAuth(lambda: {"forge": config}, LocalTokens(tmp_path), GATEWAY)
    one, two = [await oauth.storage("forge", person).get_client_info() for person in (ALICE, BOB)]
    assert one is not None and one == two and one is not two
    assert (one.client_id, one.client_secret, one.token_endpoint_auth_method) == ("gw", "s3", "client_secret_basic")
    assert [str(uri) for uri in one.redirect_uris or []] == [oauth.redirect_uri]
