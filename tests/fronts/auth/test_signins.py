"""The page's own sign-ins (fronts/auth/signins.py), in process on the local store: a random id, never the token,
bound to the identity; ended by sign-out, by its lifetime, by a JWT's own expiry, or by its token leaving the
config; anything else in the cookie is no sign-in."""

import time

import jwt
import pytest

from gateway.config import AuthConfig, ListenConfig
from gateway.fronts.auth.configured import authenticator
from gateway.fronts.auth.signins import PageSignIns
from gateway.session import Identity
from gateway.store.local.signins import LocalSignIns

pytestmark = pytest.mark.anyio
ALICE = "alice-token-0123456789"
ISSUER = "https://idp.example"


def signins_for(tokens: list[dict[str, object]], store: LocalSignIns, clock: list[float]) -> PageSignIns:
    auth = AuthConfig.model_validate(
        {
            "tokens": tokens,
            "resource_url": "https://gw.example/mcp",
            "jwt": {"issuer": ISSUER, "jwks_url": "https://idp.example/jwks"},
        }
    )
    return PageSignIns(store, authenticator(auth, ListenConfig()), ttl_s=3600, clock=lambda: clock[0])


async def test_a_sign_in_is_a_random_id_bound_to_the_identity_until_sign_out() -> None:
    store, clock = LocalSignIns(), [time.time()]
    signins = signins_for([{"name": "alice", "token": ALICE, "groups": ["ops"]}], store, clock)
    alice = signins.authenticator.static.named("alice")
    assert alice is not None
    cookie, lasts_s = await signins.open(alice, ALICE)
    again, _ = await signins.open(alice, ALICE)
    assert cookie != again and ALICE not in cookie and lasts_s == 3600
    assert ALICE not in repr(store._records) and cookie not in repr(store._records)  # a digest of the id only
    assert await signins.identity(cookie) == alice
    await signins.close(cookie)
    assert await signins.identity(cookie) is None  # a copy of the cookie is worth nothing now
    assert await signins.identity(again) == alice  # another browser's sign-in is its own


async def test_a_sign_in_ends_after_its_lifetime() -> None:
    store, clock = LocalSignIns(), [time.time()]
    signins = signins_for([{"name": "alice", "token": ALICE}], store, clock)
    cookie, _ = await signins.open(Identity("alice", "static", "alice"), ALICE)
    clock[0] += 3599
    assert await signins.identity(cookie) is not None
    clock[0] += 1
    assert await signins.identity(cookie) is None


async def test_a_jwt_sign_in_ends_with_the_token_itself() -> None:
    store, clock = LocalSignIns(), [time.time()]
    signins = signins_for([], store, clock)
    token = jwt.encode({"sub": "carol", "exp": int(clock[0]) + 600}, "k" * 32, algorithm="HS256")
    carol = Identity("Carol", "jwt", "carol", issuer=ISSUER, groups=frozenset({"dev"}))
    cookie, lasts_s = await signins.open(carol, token)
    assert 598 <= lasts_s <= 600  # not the page's hour: the token's ten minutes
    assert await signins.identity(cookie) == carol
    clock[0] += 601
    assert await signins.identity(cookie) is None


async def test_a_token_taken_out_of_the_config_ends_its_sign_ins_and_groups_are_read_anew() -> None:
    store, clock = LocalSignIns(), [time.time()]
    before = signins_for([{"name": "alice", "token": ALICE, "groups": ["ops"]}], store, clock)
    cookie, _ = await before.open(Identity("alice", "static", "alice", groups=frozenset({"ops"})), ALICE)
    demoted = signins_for([{"name": "alice", "token": ALICE, "groups": ["dev"]}], store, clock)  # a restart
    found = await demoted.identity(cookie)
    assert found is not None and found.groups == {"dev"}
    assert await signins_for([{"name": "bob", "token": ALICE + "x"}], store, clock).identity(cookie) is None


@pytest.mark.parametrize("cookie", ["", "x", ALICE, "a" * 42, "a" * 44, "../" * 20, "a" * 42 + "\n"])
async def test_anything_but_an_id_the_page_made_is_no_sign_in(cookie: str) -> None:
    store, clock = LocalSignIns(), [time.time()]
    signins = signins_for([{"name": "alice", "token": ALICE}], store, clock)
    assert await signins.identity(cookie) is None
    await signins.close(cookie)
