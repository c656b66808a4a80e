"""JWT access tokens against a real JWKS endpoint: what is accepted, what is refused and why, key refresh."""

from collections.abc import Iterator

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
