"""Identity on a real HTTP gateway: JWTs from a local identity provider, static tokens with names, the RFC 9728
challenge and metadata, sessions that only their opener may use (SDK path and lane), /healthz bare vs details."""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from starlette.types import Message, Receive, Scope, Send

from gateway.fronts.auth.asgi import Authenticate
from gateway.fronts.auth.bearer import Authenticator
from gateway.fronts.auth.callers import IDENTITY_SCOPE
from gateway.fronts.auth.static import StaticTokens
from gateway.session import ANONYMOUS
from tests.fronts.lanes.test_http import envelope, headers
from tests.harness import hints_of, http_client, http_gateway, http_gateways, kitchen, text_of, write_config
from tests.idp import AUDIENCE, ISSUER, IdentityProvider, serving, unsigned

pytestmark = pytest.mark.anyio

ALICE, BOB = "alice-token-0123456789", "bob-token-0123456789ab"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
LEGACY = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@pytest.fixture(scope="module")
def idp() -> Iterator[IdentityProvider]:
    with serving(IdentityProvider()) as provider:
        yield provider


def jwt_config(tmp_path: Path, idp: IdentityProvider) -> Path:
    auth = {
        "resource_url": AUDIENCE,
        "jwt": {"issuer": ISSUER, "jwks_url": idp.jwks_url, "required_scopes": ["mcp"]},
        "tokens": [{"name": "ci-bot", "token": ALICE + "-ci"}],
    }
    return write_config(tmp_path, {"k": kitchen("k")}, auth=auth)


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def test_jwts_are_checked_and_refusals_carry_the_challenge(tmp_path: Path, idp: IdentityProvider) -> None:
    async with http_gateway(jwt_config(tmp_path, idp)) as base, httpx2.AsyncClient(base_url=base, timeout=30) as http:
        bare = await http.post("/mcp", json=INITIALIZE, headers=LEGACY)
        expired = await http.post("/mcp", json=INITIALIZE, headers=LEGACY | bearer(idp.token(ttl_s=-120, scope="mcp")))
        none = await http.post("/mcp", json=INITIALIZE, headers=LEGACY | bearer(unsigned()))
        scopeless = await http.post("/mcp", json=INITIALIZE, headers=LEGACY | bearer(idp.token(scope="read")))
        metadata = await http.get("/.well-known/oauth-protected-resource/mcp")
        root_metadata = await http.get("/.well-known/oauth-protected-resource")
        async with http_client(base, headers=bearer(idp.token("alice", scope="mcp"))) as client:
            assert text_of(await client.call_tool("k.echo", {"text": "as alice"})) == "as alice"
        async with http_client(base, headers=bearer(ALICE + "-ci"), mode="legacy") as client:
            assert text_of(await client.call_tool("k.echo", {"text": "as the bot"})) == "as the bot"
    challenge = 'resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource/mcp"'
    assert bare.status_code == 401 and challenge in bare.headers["www-authenticate"]
    assert "error=" not in bare.headers["www-authenticate"]  # no credentials: the challenge alone (RFC 6750 §3.1)
    assert expired.status_code == 401 and 'error="invalid_token"' in expired.headers["www-authenticate"]
    assert "expired" in expired.json()["error"]["message"]
    assert none.status_code == 401 and "'none' is not accepted" in none.json()["error"]["message"]
    assert scopeless.status_code == 403
    assert 'error="insufficient_scope"' in scopeless.headers["www-authenticate"]
    assert 'scope="mcp"' in scopeless.headers["www-authenticate"]
    for answer in (metadata, root_metadata):
        assert answer.status_code == 200
        assert answer.json()["resource"] == AUDIENCE and answer.json()["authorization_servers"] == [ISSUER + "/"]


async def static_gateway_config(tmp_path: Path) -> Path:
    auth = {"tokens": [{"name": "alice", "token": ALICE}, {"name": "bob", "token": BOB}]}
    return write_config(tmp_path, {"k": kitchen("k")}, auth=auth)


async def test_a_handshake_session_answers_only_the_identity_that_opened_it(tmp_path: Path) -> None:
    config = await static_gateway_config(tmp_path)
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    async with http_gateway(config) as base, httpx2.AsyncClient(base_url=base, timeout=30) as http:
        opened = await http.post("/mcp", json=INITIALIZE, headers=LEGACY | bearer(ALICE))
        sid = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        as_bob = await http.post("/mcp", json=listing, headers=LEGACY | sid | bearer(BOB))
        as_alice = await http.post("/mcp", json=listing, headers=LEGACY | sid | bearer(ALICE))
    assert opened.status_code == 200
    assert as_bob.status_code == 404  # as if the session did not exist
    assert as_alice.status_code == 200


async def test_the_lane_keeps_one_identity_s_session_state_from_another_using_its_session_id(tmp_path: Path) -> None:
    config = await static_gateway_config(tmp_path)
    sid = {"mcp-session-id": "shared-looking-id"}

    async def call(http: httpx2.AsyncClient, token: str) -> list[str]:
        response = await http.post(
            "/mcp", json=envelope("k.echo", {"text": "x"}), headers=headers("k.echo", **sid) | bearer(token)
        )
        result: dict[str, Any] = response.json()["result"]
        return [c["text"] for c in result["content"] if c["text"].startswith("[gateway]")]

    async with http_gateway(config) as base, httpx2.AsyncClient(base_url=base, timeout=30) as http:
        alice_first, alice_again, bob_first = await call(http, ALICE), await call(http, ALICE), await call(http, BOB)
    # The driver bootstrap rides on a session's first result: Bob's first call is his session's first.
    assert alice_first and not alice_again
    assert bob_first == alice_first


async def test_healthz_is_bare_for_anyone_and_detailed_behind_the_token_and_host_checks(tmp_path: Path) -> None:
    config = await static_gateway_config(tmp_path)
    async with http_gateway(config) as base, httpx2.AsyncClient(base_url=base, timeout=30) as http:
        anyone = await http.get("/healthz")
        wrong = await http.get("/healthz", headers=bearer("not-a-token"))
        operator = await http.get("/healthz", headers=bearer(ALICE))
        rebinding = await http.get("/healthz", headers=bearer(ALICE) | {"host": "evil.example"})
        foreign_page = await http.get("/healthz", headers=bearer(ALICE) | {"origin": "http://evil.example"})
    for bare in (anyone, wrong, rebinding, foreign_page):
        assert bare.status_code == 200 and json.loads(bare.text) == {"status": "ok"}
    assert operator.json()["servers"]["k"]["state"] == "up"


async def test_a_session_of_the_sdk_client_stays_usable_and_bootstraps_once(tmp_path: Path) -> None:
    config = await static_gateway_config(tmp_path)
    async with http_gateway(config) as base, http_client(base, headers=bearer(BOB)) as client:
        first = await client.call_tool("k.echo", {"text": "one"})
        second = await client.call_tool("k.echo", {"text": "two"})
    assert hints_of(first) and not hints_of(second)


async def test_a_jwks_outage_is_answered_503_with_a_one_line_challenge_and_tokens_work_once_it_ends(
    tmp_path: Path,
) -> None:
    with serving(IdentityProvider()) as idp:
        idp.status = 500
        auth = {"resource_url": AUDIENCE, "jwt": {"issuer": ISSUER, "jwks_url": idp.jwks_url, "jwks_min_refresh_s": 0}}
        config = write_config(tmp_path, {"k": kitchen("k")}, auth=auth)
        odd_kid = 'k"\\\n\u00e9\u2028\x07'  # what a token's header may say ends up in the challenge
        idp.add_key(odd_kid, "RS256", publish=False)
        async with http_gateway(config) as base, httpx2.AsyncClient(base_url=base, timeout=30) as http:
            down = await http.post("/mcp", json=INITIALIZE, headers=LEGACY | bearer(idp.token()))
            idp.status = 200
            up = await http.post("/mcp", json=INITIALIZE, headers=LEGACY | bearer(idp.token()))
            odd = await http.post("/mcp", json=INITIALIZE, headers=LEGACY | bearer(idp.token(kid=odd_kid)))
    assert down.status_code == 503 and down.headers["retry-after"].isdigit()
    challenge = down.headers["www-authenticate"]
    assert 'error="temporarily_unavailable"' in challenge and "answered HTTP 500" in challenge
    assert "Cannot check tokens right now" in down.json()["error"]["message"]
    assert up.status_code == 200
    assert odd.status_code == 401 and "does not publish" in odd.headers["www-authenticate"]
    assert odd.headers["www-authenticate"].isascii()


LOCAL_ONLY = ("/ui", "/ui/calls", "/ui/static/page.js", "/metrics", "/ui/login")


async def test_without_auth_the_page_metrics_reload_and_health_details_are_for_callers_on_this_machine(
    tmp_path: Path,
) -> None:
    for folder in ("plain", "behind"):
        (tmp_path / folder).mkdir()
    plain = write_config(tmp_path / "plain", {"k": kitchen("k")})
    behind = write_config(tmp_path / "behind", {"k": kitchen("k")}, listen={"trusted_proxies": ["127.0.0.1"]})
    far = {"x-forwarded-for": "203.0.113.7"}
    async with http_gateways(plain, behind) as (direct, proxied), httpx2.AsyncClient(timeout=30) as http:
        for path in LOCAL_ONLY:
            assert (await http.get(direct + path)).status_code == 200, path
            for header in (far, {"forwarded": "for=203.0.113.7"}, {"x-real-ip": "203.0.113.7"}):
                refused = await http.get(direct + path, headers=header)
                assert refused.status_code == 403, (path, header)
            # Behind a trusted proxy the headers are believed: its local client may, its remote one may not.
            assert (await http.get(proxied + path, headers={"x-forwarded-for": "127.0.0.1"})).status_code == 200
            assert (await http.get(proxied + path, headers=far)).status_code == 403, path
        untrusted = await http.get(direct + "/ui/calls", headers={"x-forwarded-for": "127.0.0.1"})
        spoofed = await http.get(proxied + "/metrics", headers={"x-forwarded-for": "127.0.0.1, 203.0.113.7"})
        reload = await http.post(direct + "/reload", headers=far)
        health = await http.get(direct + "/healthz", headers=far)
        details = await http.get(direct + "/healthz")
        served = await http.post(direct + "/mcp", json=INITIALIZE, headers=LEGACY | far)
    assert untrusted.status_code == 403 and spoofed.status_code == 403  # the config names who is believed
    message = reload.json()["error"]["message"]
    assert reload.status_code == 403 and message.startswith(
        "POST /reload refused for a request a proxy forwarded (x-forwarded-for header): this gateway has no auth "
        "configured, so the page, /metrics, /reload and /healthz's details answer callers on this machine only."
    )
    assert "listen.trusted_proxies" in message and "auth.tokens or auth.jwt" in message
    assert health.status_code == 200 and health.json() == {"status": "ok"}  # bare, as for anyone
    assert details.json()["servers"]["k"]["state"] == "up"
    assert served.status_code == 200  # MCP itself answers whoever the listen address lets in


async def test_without_auth_a_peer_elsewhere_is_refused_by_the_middleware_itself() -> None:
    """In process, with a peer no test can be on (203.0.113.7): the page's paths refused, /healthz let through
    without an identity (its bare answer), /mcp with the anonymous one."""
    reached: list[Scope] = []
    sent: list[Message] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        reached.append(scope)

    async def send(message: Message) -> None:
        sent.append(message)

    gate = Authenticate(app, Authenticator(StaticTokens([])))
    for path in ("/ui/calls", "/metrics", "/reload", "/healthz", "/mcp"):
        scope: Scope = {"type": "http", "method": "GET", "path": path, "headers": [], "client": ("203.0.113.7", 40000)}
        await gate(scope, None, send)  # type: ignore[arg-type]  # nothing reads the body
    assert [s["path"] for s in reached] == ["/healthz", "/mcp"]
    assert IDENTITY_SCOPE not in reached[0] and reached[1][IDENTITY_SCOPE] == ANONYMOUS
    starts = [m for m in sent if m["type"] == "http.response.start"]
    bodies = [m["body"] for m in sent if m["type"] == "http.response.body"]
    assert [m["status"] for m in starts] == [403, 403, 403]
    assert all(b"refused for a caller at 203.0.113.7" in body for body in bodies)
