"""JWT access tokens against a real JWKS endpoint: what is accepted, what is refused and why, key refresh."""

import threading
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from gateway.fronts.auth.bearer import Authenticator
from gateway.fronts.auth.bearer_jwt import JwtVerifier
from gateway.fronts.auth.jwks import KeySet
from gateway.fronts.auth.refusal import Refused
from gateway.fronts.auth.static import StaticToken, StaticTokens, digest
from tests.idp import AUDIENCE, ISSUER, IdentityProvider, serving, tampered, unsigned

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def idp() -> Iterator[IdentityProvider]:
    with serving(IdentityProvider()) as provider:
        yield provider


def verifier(idp: IdentityProvider, **kw: object) -> JwtVerifier:
    options: dict[str, object] = {"issuer": ISSUER, "audience": AUDIENCE, "name_claim": "preferred_username"} | kw
    return JwtVerifier(KeySet(idp.jwks_url, min_refresh_s=0), **options)  # type: ignore[arg-type]


async def refusal(v: JwtVerifier, token: str) -> Refused:
    with pytest.raises(Refused) as caught:
        await v.verify(token)
    return caught.value


async def test_a_valid_token_yields_its_subject_name_groups_and_scopes(idp: IdentityProvider) -> None:
    token = idp.token("u-17", preferred_username="alice", groups=["dev", "ops"], scope="mcp read")
    identity = await verifier(idp).verify(token)
    assert (identity.name, identity.subject, identity.issuer) == ("alice", "u-17", ISSUER)
    assert identity.groups == {"dev", "ops"} and identity.scopes == {"mcp", "read"}
    assert identity.key == f"jwt:{ISSUER}:u-17"


async def test_the_verified_token_stays_on_its_identity_for_token_exchange_but_not_in_its_repr_or_equality(
    idp: IdentityProvider,
) -> None:
    first, second = idp.token("u-17", jti="one"), idp.token("u-17", jti="two")
    identity, renewed = await verifier(idp).verify(first), await verifier(idp).verify(second)
    assert identity.jwt == first and first not in repr(identity)
    assert identity == renewed and hash(identity) == hash(renewed)  # one principal, whichever token it came with


async def test_an_ec_signed_token_is_accepted_too(idp: IdentityProvider) -> None:
    assert (await verifier(idp).verify(idp.token("bob", kid="ec-1"))).name == "bob"


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ({"exp": 1_000_000}, "expired"),
        ({"aud": "http://elsewhere/mcp"}, "not for this gateway"),
        ({"iss": "https://evil.test"}, "another issuer"),
        ({"nbf": 4_000_000_000}, "not valid yet"),
        ({"sub": None}, "lacks a required claim"),
    ],
)
async def test_bad_claims_are_refused_with_the_reason(
    idp: IdentityProvider, claims: dict[str, object], reason: str
) -> None:
    refused = await refusal(verifier(idp), idp.token(**({"sub": "alice"} | claims)))  # type: ignore[arg-type]
    assert (refused.status, refused.error) == (401, "invalid_token")
    assert reason in refused.description


async def test_an_unsigned_token_is_refused_before_any_key_is_used(idp: IdentityProvider) -> None:
    refused = await refusal(verifier(idp), unsigned())
    assert "'none' is not accepted" in refused.description


async def test_a_tampered_payload_fails_the_signature(idp: IdentityProvider) -> None:
    refused = await refusal(verifier(idp), tampered(idp.token("alice"), sub="root"))
    assert "signature does not verify" in refused.description


async def test_a_token_signed_by_an_unpublished_key_is_refused(idp: IdentityProvider) -> None:
    idp.add_key("rogue", "RS256", publish=False)
    refused = await refusal(verifier(idp), idp.token("alice", kid="rogue"))
    assert "'rogue'" in refused.description and idp.jwks_url in refused.description


async def test_missing_scopes_answer_403_naming_them(idp: IdentityProvider) -> None:
    refused = await refusal(verifier(idp, required_scopes=["mcp", "admin"]), idp.token("alice", scope="mcp"))
    assert (refused.status, refused.error, refused.scope) == (403, "insufficient_scope", "admin mcp")
    assert "['admin']" in refused.description


async def test_keys_are_cached_and_refetched_once_for_a_new_kid(idp: IdentityProvider) -> None:
    v = verifier(idp)
    for _ in range(5):
        await v.verify(idp.token("alice"))
    assert v.keys.fetches == 1
    idp.add_key("rsa-2", "RS256")  # the issuer rotates in a new key
    assert (await v.verify(idp.token("carol", kid="rsa-2"))).subject == "carol"
    assert v.keys.fetches == 2


async def test_unknown_kids_do_not_hammer_the_issuer(idp: IdentityProvider) -> None:
    v = JwtVerifier(KeySet(idp.jwks_url, min_refresh_s=3600), issuer=ISSUER, audience=AUDIENCE)
    await v.verify(idp.token("alice"))
    idp.add_key("later", "RS256", publish=False)
    for _ in range(3):
        await refusal(v, idp.token("alice", kid="later"))
    assert v.keys.fetches == 1


async def test_an_unreachable_jwks_answers_503_not_a_crash() -> None:
    v = JwtVerifier(KeySet("http://127.0.0.1:9/jwks.json", timeout_s=2), issuer=ISSUER, audience=AUDIENCE)
    idp = IdentityProvider()
    refused = await refusal(v, idp.token("alice"))
    assert (refused.status, refused.error) == (503, "temporarily_unavailable")
    assert "127.0.0.1:9" in refused.description


def test_symmetric_or_none_algorithms_cannot_be_configured() -> None:
    with pytest.raises(ValueError, match="HS256"):
        JwtVerifier(KeySet("http://x"), issuer=ISSUER, audience=AUDIENCE, algorithms=["RS256", "HS256"])


async def test_static_tokens_map_to_named_identities_and_jwts_still_work(idp: IdentityProvider) -> None:
    static = StaticTokens([StaticToken("ci-bot", digest("tok-ci"), groups=frozenset({"bots"}))])
    auth = Authenticator(static, verifier(idp))
    bot = await auth.identify("Bearer tok-ci")
    assert (bot.name, bot.kind) == ("ci-bot", "static") and bot.groups == {"bots"}
    assert (await auth.identify(f"Bearer {idp.token('dave')}")).name == "dave"
    for header in (None, "", "Basic dG9rLWNp", "Bearer "):
        refused = None
        try:
            await auth.identify(header)
        except Refused as exc:
            refused = exc
        assert refused is not None and refused.status == 401 and refused.error is None
    with pytest.raises(Refused, match="neither a known static token"):
        await auth.identify("Bearer tok-wrong")


async def test_without_any_auth_configured_everyone_is_anonymous() -> None:
    auth = Authenticator(StaticTokens([]))
    assert not auth.required
    assert (await auth.identify("Bearer whatever")).name == "anonymous"


class Clock:
    """A timer the test moves by hand (the refresh rate limit is in seconds)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def outage_verifier(idp: IdentityProvider, clock: Clock, **keyset: Any) -> JwtVerifier:
    keys = KeySet(idp.jwks_url, min_refresh_s=30, timer=clock, **keyset)
    return JwtVerifier(keys, issuer=ISSUER, audience=AUDIENCE)


def retry_later(refused: Refused) -> bool:
    """A 503 the client can act on: one line, saying when to retry."""
    one_line = "\n" not in refused.description and "\r" not in refused.description
    return (refused.status, refused.error) == (503, "temporarily_unavailable") and one_line


async def test_a_failing_jwks_answers_503_not_401_until_a_fetch_succeeds() -> None:
    clock = Clock()
    with serving(IdentityProvider()) as idp:
        v = outage_verifier(idp, clock)
        idp.status = 500
        first = await refusal(v, idp.token("alice"))
        clock.now += 10  # within the rate limit: no new fetch, the same verdict
        again = await refusal(v, idp.token("alice"))
        idp.status = 200
        clock.now += 20
        accepted = await v.verify(idp.token("alice"))
    assert retry_later(first) and retry_later(again), (first, again)
    assert "answered HTTP 500" in first.description and idp.jwks_url in first.description
    assert (first.retry_after_s, again.retry_after_s) == (30, 20)
    assert accepted.subject == "alice" and idp.fetches == 2


async def test_waiters_on_a_jwks_slower_than_its_timeout_share_one_fetch_and_its_503() -> None:
    clock = Clock()
    with serving(IdentityProvider()) as idp:
        idp.hold = threading.Event()  # the issuer never answers while the test runs
        v = outage_verifier(idp, clock, timeout_s=0.5)
        refusals: list[Refused] = []

        async def verify() -> None:
            refusals.append(await refusal(v, idp.token("alice")))

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                for _ in range(5):
                    tg.start_soon(verify)
            later = await refusal(v, idp.token("alice"))
    assert len(refusals) == 5 and all(retry_later(r) for r in [*refusals, later]), refusals
    assert all("no answer within 0.5 s" in r.description for r in [*refusals, later])
    assert idp.fetches == 1


async def test_a_rotated_in_key_that_cannot_be_fetched_is_503_and_the_known_keys_keep_working() -> None:
    clock = Clock()
    with serving(IdentityProvider()) as idp:
        v = outage_verifier(idp, clock, ttl_s=600)
        await v.verify(idp.token("alice"))
        idp.status = 503
        idp.add_key("rsa-2", "RS256")
        clock.now += 30
        rotated = await refusal(v, idp.token("carol", kid="rsa-2"))
        rotated_again = await refusal(v, idp.token("carol", kid="rsa-2"))
        clock.now += 600  # past the keys' ttl, with the issuer still down: the stale keys beat locking all out
        known = await v.verify(idp.token("alice"))
        idp.status = 200
        clock.now += 30
        recovered = await v.verify(idp.token("carol", kid="rsa-2"))
    assert retry_later(rotated) and retry_later(rotated_again)
    assert (known.subject, recovered.subject) == ("alice", "carol")


@pytest.mark.parametrize("shape", ["declared", "endless"])
async def test_a_jwks_answer_over_the_size_limit_is_refused_without_reading_it_all(shape: str) -> None:
    clock = Clock()
    with serving(IdentityProvider()) as idp:
        idp.padding, idp.endless = (2 * 1024 * 1024, False) if shape == "declared" else (0, True)
        v = outage_verifier(idp, clock, max_bytes=64 * 1024)
        with anyio.fail_after(10):  # an endless answer read whole would never end
            refused = await refusal(v, idp.token("alice"))
    assert retry_later(refused)
    assert "over the limit of 65,536 (auth.jwt.jwks_max_bytes)" in refused.description
    assert ("is 2,097," if shape == "declared" else "the answer passed") in refused.description
