"""The issuer's signing keys (`KeySet`) against a real local JWKS endpoint (tests/idp.py), on a clock the test
turns: a token without a key id gets the set's only key, keys past `ttl_s` are fetched again so a rotated-out key
stops working, keys not for signing or not usable are skipped (none left is an error saying so), and an error
answer says what to check and when the next try is. How tokens fare with these keys is test_bearer_jwt.py's."""

from collections.abc import Iterator
from typing import Any

import pytest

from gateway.fronts.auth.jwks import KeySet, KeysUnavailable
from tests.idp import IdentityProvider, serving

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def idp() -> Iterator[IdentityProvider]:
    with serving(IdentityProvider()) as provider:
        yield provider


async def test_a_token_without_a_key_id_gets_the_only_key_and_none_among_several(idp: IdentityProvider) -> None:
    several = KeySet(idp.jwks_url)
    assert await several.key(None) is None  # two published: which one is not guessed
    assert (await several.key("ec-1")) is not None
    idp.published = {"rsa-1"}
    only = KeySet(idp.jwks_url)
    key = await only.key(None)
    assert key is not None and key.key_id == "rsa-1"


async def test_keys_past_their_ttl_are_fetched_again_so_a_rotated_out_key_stops_working(
    idp: IdentityProvider,
) -> None:
    clock = Clock()
    keys = KeySet(idp.jwks_url, ttl_s=60, min_refresh_s=3600, timer=clock)
    assert await keys.key("rsa-1") is not None
    idp.published.discard("rsa-1")  # the issuer rotates it out
    clock.now += 30
    assert await keys.key("rsa-1") is not None and keys.fetches == 1  # within the ttl: the cached set
    clock.now += 31
    assert await keys.key("rsa-1") is None and keys.fetches == 2


async def test_keys_not_for_signing_or_not_usable_are_skipped_and_none_left_is_said() -> None:
    class Odd(IdentityProvider):
        def jwks(self) -> dict[str, Any]:
            good = super().jwks()["keys"]
            return {"keys": [{**good[0], "use": "enc", "kid": "enc-1"}, {"kty": "nope", "kid": "odd"}, *good]}

    with serving(Odd()) as odd:
        keys = KeySet(odd.jwks_url)
        assert await keys.key("enc-1") is None and await keys.key("odd") is None
        assert await keys.key("rsa-1") is not None

    class Empty(IdentityProvider):
        def jwks(self) -> dict[str, Any]:
            return {"keys": [{"kty": "nope"}]}

    with serving(Empty()) as empty:
        with pytest.raises(KeysUnavailable, match="no usable signing keys in the answer"):
            await KeySet(empty.jwks_url).key("rsa-1")


async def test_an_error_answer_names_what_to_check_and_when_the_next_try_is(idp: IdentityProvider) -> None:
    clock = Clock()
    keys = KeySet(idp.jwks_url, min_refresh_s=30, timer=clock)
    idp.status = 404
    with pytest.raises(KeysUnavailable) as failed:
        await keys.key("rsa-1")
    assert str(failed.value) == f"JWKS {idp.jwks_url} answered HTTP 404; check auth.jwt.jwks_url"
    assert failed.value.retry_in_s == 30
    clock.now += 10
    with pytest.raises(KeysUnavailable) as again:
        await keys.key("rsa-1")
    assert (again.value.retry_in_s, keys.fetches) == (20, 1)  # no new fetch inside min_refresh_s
    idp.status = 200
    clock.now += 20
    assert await keys.key("rsa-1") is not None and keys.fetches == 2
