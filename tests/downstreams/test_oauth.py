"""OAuth-protected servers as calls meet them (`gateway.downstreams.oauth`), against a real authorization server and
MCP server (`tests/servers/guarded.py`): a person who has not signed in is told where to, with a link that stands
for them once, and gets no connection of anyone else's. The sign-in itself is `test_oauth_signin.py`'s, the
connection's provider and storage `test_oauth_providers.py`'s, the SDK's provider `test_oauth_sdk.py`'s."""

from pathlib import Path
from urllib.parse import urlparse

import anyio
import pytest
from cryptography.fernet import Fernet

from gateway.downstreams.oauth import OAuth
from gateway.downstreams.oauth_providers import SignInNeeded
from gateway.downstreams.oauth_tokens import token_key
from gateway.downstreams.pool import Pool
from gateway.store.backends import open_stores
from gateway.store.local.tokens import LocalTokens
from tests.downstreams.oauth_harness import ALICE, BOB, GATEWAY, pool_of, server, sign_in, whoami
from tests.services import redis_server, store_config

pytestmark = pytest.mark.anyio


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


@pytest.mark.parametrize("backend", ["local", "redis"])
async def test_a_sign_out_elsewhere_stops_the_very_next_call_on_a_connection_that_is_up(
    backend: str, guarded: str, key: str, tmp_path: Path
) -> None:
    # Elsewhere: on Redis another replica, locally another process on the same folder (`gateway logout`). Her
    # connection here stays up and its token still works at the server: only the per-call read of her grant stops it.
    config = server(guarded)
    with redis_server(tmp_path / "redis") as redis:
        url = redis.url if backend == "redis" else ""
        here, there = (open_stores(store_config(backend, url, "oauth:", tmp_path)) for _ in range(2))
        try:
            with anyio.fail_after(60):
                async with (
                    OAuth(lambda: {"forge": config}, here.tokens, GATEWAY) as serving,
                    OAuth(lambda: {"forge": config}, there.tokens, GATEWAY) as elsewhere,
                    pool_of(serving, config).running() as pool,
                ):
                    await sign_in(elsewhere, ALICE)
                    assert await whoami(pool, ALICE) == "alice"
                    await elsewhere.sign_out("forge", ALICE)
                    with pytest.raises(SignInNeeded):
                        await whoami(pool, ALICE)
                    assert pool.processes == 0  # her connection went with her grant
        finally:
            await here.aclose()
            await there.aclose()
