"""A person's sign-in (`gateway.downstreams.oauth_signin`), against a real authorization server and MCP server
(`tests/servers/guarded.py`): its callback is finished only from the browser that began it, once, the newest
sign-in of a person counts, and either half may land on any replica (the shared store over Redis, under digests)."""

from pathlib import Path
from urllib.parse import urlparse

import anyio
import pytest

from gateway.downstreams.oauth import OAuth
from gateway.downstreams.oauth_providers import SignInNeeded, SignInRefused
from gateway.downstreams.pool import Pool
from gateway.store.backends import open_stores
from gateway.store.local.tokens import LocalTokens
from tests.downstreams.oauth_harness import ALICE, BOB, GATEWAY, browse, pool_of, server, whoami
from tests.services import redis_server, store_config

pytestmark = pytest.mark.anyio


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
