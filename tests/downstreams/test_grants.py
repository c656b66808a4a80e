"""Tokens for a downstream server without a browser (`gateway.downstreams.grants`), against a real authorization server
and MCP server (`tests/servers/guarded.py`) that trusts a real identity provider's JWTs (`tests/idp.py`): token
exchange per caller (RFC 8693) and one client-credentials token for everyone."""

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from cryptography.fernet import Fernet
from pydantic import TypeAdapter

from gateway.app.servers import Servers
from gateway.config import SecretsConfig, ServerConfig
from gateway.downstreams import secrets
from gateway.downstreams.downstream import Downstream
from gateway.downstreams.grants import ExchangeNeedsJwt, ExchangeRefused, Grants
from gateway.downstreams.oauth_tokens import token_key
from gateway.downstreams.pool import Pool
from gateway.downstreams.relay import Relay
from gateway.errors import GatewayError
from gateway.session import Identity, os_user
from gateway.store.backends import open_stores
from gateway.store.local.tokens import LocalTokens
from tests.downstreams.oauth_harness import admin, ignored, who_answers
from tests.harness import free_port
from tests.idp import AUDIENCE, ISSUER, IdentityProvider
from tests.idp import serving as serving_idp
from tests.servers.guarded import serving
from tests.services import redis_server, store_config

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def idp() -> Iterator[IdentityProvider]:
    with serving_idp(IdentityProvider()) as provider:
        yield provider


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory, idp: IdentityProvider) -> Iterator[str]:
    trust = ("--jwks", idp.jwks_url, "--jwt-issuer", ISSUER, "--jwt-audience", AUDIENCE)
    with serving(tmp_path_factory.mktemp("guarded"), *trust) as base:
        yield base


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    value = Fernet.generate_key().decode()
    monkeypatch.setenv("GATEWAY_TOKEN_KEY", value)
    return value


def caller(idp: IdentityProvider, sub: str, **claims: Any) -> Identity:
    """Who the HTTP front would make of a request bearing `sub`'s JWT (`JwtVerifier.verify` keeps it on them)."""
    return Identity(sub, "jwt", sub, issuer=ISSUER, jwt=idp.token(sub, **claims))


def exchange_server(base: str, **auth: Any) -> ServerConfig:
    auth = {"type": "token_exchange", "token_endpoint": f"{base}/token", "client_id": "gateway"} | auth
    config = {"transport": "http", "url": f"{base}/mcp", "auth": {"client_secret": "gateway-secret", **auth}}
    return TypeAdapter(ServerConfig).validate_python(config)


def built(grants: Grants, config: ServerConfig) -> Downstream | Pool:
    relay = Relay(logger_name=lambda server, name: server)
    env = secrets.from_config(SecretsConfig(sources=["env"]))
    servers = Servers(relay, env, lambda: 1 << 20, lambda s, k, a=None: None, ignored, grants=grants)
    return servers("forge", config)


async def whoami_as(pool: Pool, identity: Identity) -> str | None:
    async with pool.lease(identity, {}) as downstream:
        return await who_answers(downstream)


@pytest.fixture
async def exchanging(guarded: str, tmp_path: Path) -> AsyncIterator[tuple[Pool, LocalTokens]]:
    store = LocalTokens(tmp_path / "tokens")
    config = exchange_server(guarded)
    pool = built(Grants(lambda: {"forge": config}, store), config)
    assert isinstance(pool, Pool)
    async with pool.running():
        yield pool, store


async def test_each_caller_acts_as_themselves_with_their_jwt_exchanged_once_and_sealed_at_rest(
    exchanging: tuple[Pool, LocalTokens], guarded: str, idp: IdentityProvider, tmp_path: Path
) -> None:
    pool, store = exchanging
    alice, bob = caller(idp, "alice"), caller(idp, "bob")
    before = (await admin(guarded, "ttl", s=3600))["exchanges"]
    assert await whoami_as(pool, alice) == "alice"
    assert await whoami_as(pool, bob) == "bob"
    assert await whoami_as(pool, alice) == "alice"
    assert (await admin(guarded, "ttl", s=3600))["exchanges"] - before == 2  # alice's second call: her cached token
    assert pool.processes == 2
    sealed = await store.get(token_key(alice, "forge"))
    assert sealed is not None and b"access_token" not in sealed and alice.jwt is not None
    assert alice.jwt.encode() not in sealed and alice.jwt not in repr(alice)


class Counted(LocalTokens):
    """The file store, counting its reads."""

    reads = 0

    async def get(self, key: str) -> bytes | None:
        self.reads += 1
        return await super().get(key)


async def test_a_live_token_is_not_read_from_the_store_on_every_call(
    guarded: str, idp: IdentityProvider, tmp_path: Path
) -> None:
    config = exchange_server(guarded)
    store = Counted(tmp_path / "tokens")
    pool = built(Grants(lambda: {"forge": config}, store), config)
    assert isinstance(pool, Pool)
    kate = caller(idp, "kate")
    async with pool.running():
        assert await whoami_as(pool, kate) == "kate"
        reads = store.reads
        for _ in range(20):
            assert await whoami_as(pool, kate) == "kate"
    assert store.reads == reads


async def test_fifty_concurrent_first_calls_of_one_caller_make_one_exchange(
    exchanging: tuple[Pool, LocalTokens], guarded: str, idp: IdentityProvider
) -> None:
    pool, _ = exchanging
    carol = caller(idp, "carol")
    before = (await admin(guarded, "ttl", s=3600))["exchanges"]
    seen: list[str | None] = []

    async def call() -> None:
        seen.append(await whoami_as(pool, carol))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            for _ in range(50):
                tg.start_soon(call)
    assert seen == ["carol"] * 50
    assert (await admin(guarded, "ttl", s=3600))["exchanges"] - before == 1


async def test_a_token_exchanged_through_one_replica_serves_calls_through_another_over_redis(
    guarded: str, idp: IdentityProvider, tmp_path: Path
) -> None:
    config = exchange_server(guarded)
    ivan = caller(idp, "ivan")
    with redis_server(tmp_path / "redis") as redis:
        one, two = (open_stores(store_config("redis", redis.url, "grants:", tmp_path / n)) for n in ("one", "two"))
        try:
            before = (await admin(guarded, "ttl", s=3600))["exchanges"]
            with anyio.fail_after(60):
                for stores in (one, two):
                    pool = built(Grants(lambda: {"forge": config}, stores.tokens), config)
                    assert isinstance(pool, Pool)
                    async with pool.running():
                        assert await whoami_as(pool, ivan) == "ivan"
            assert (await admin(guarded, "ttl", s=3600))["exchanges"] - before == 1
            raw = await one.redis.get(f"grants:token:{token_key(ivan, 'forge')}")
            assert raw is not None and b"access_token" not in raw  # sealed there too
        finally:
            await one.aclose()
            await two.aclose()


async def test_a_token_about_to_end_is_exchanged_anew_before_the_call(
    exchanging: tuple[Pool, LocalTokens], guarded: str, idp: IdentityProvider
) -> None:
    pool, _ = exchanging
    dave = caller(idp, "dave")
    before = (await admin(guarded, "ttl", s=30))["exchanges"]  # within the 30 s margin: ended as soon as issued
    try:
        assert await whoami_as(pool, dave) == "dave"
        assert await whoami_as(pool, dave) == "dave"
    finally:
        after = (await admin(guarded, "ttl", s=3600))["exchanges"]
    assert after - before == 2


async def test_a_token_the_server_stops_honouring_is_forgotten_and_exchanged_anew_on_the_next_call(
    exchanging: tuple[Pool, LocalTokens], guarded: str, idp: IdentityProvider
) -> None:
    pool, store = exchanging
    jack = caller(idp, "jack")
    assert await whoami_as(pool, jack) == "jack"
    before = (await admin(guarded, "revoke", user="jack"))["exchanges"]
    with pytest.raises(GatewayError):  # this call's token is refused: 401
        await whoami_as(pool, jack)
    assert await store.get(token_key(jack, "forge")) is None  # forgotten, not sent again
    assert await whoami_as(pool, jack) == "jack"
    assert (await admin(guarded, "ttl", s=3600))["exchanges"] - before == 1


async def test_a_caller_without_a_jwt_is_told_what_is_missing_and_gets_no_connection(
    exchanging: tuple[Pool, LocalTokens],
) -> None:
    pool, _ = exchanging
    page_viewer = Identity("hana", "jwt", "hana", ISSUER)  # the page's sign-in is a cookie: no JWT with the call
    bot = Identity("ci", "static", "ci")
    without = [(os_user(), "is a stdio session's user"), (bot, "called with a static token")]
    for who, how in [*without, (page_viewer, "called without it here")]:
        with pytest.raises(ExchangeNeedsJwt) as refused:
            await whoami_as(pool, who)
        assert "carries no" in str(refused.value) and "bearer JWT" in str(refused.value), refused.value
        assert f"({who.name} {how})" in str(refused.value)
    assert pool.processes == 0


@pytest.mark.parametrize(
    ("auth", "jwt_claims", "error", "advice"),
    [
        (
            {"audience": "https://elsewhere/mcp", "resource": "https://elsewhere/mcp"},
            {},
            "invalid_target",
            "`audience`",
        ),
        ({}, {"aud": "https://another-gateway/mcp"}, "invalid_grant", "trusts the gateway's identity provider"),
        ({"client_secret": "wrong"}, {}, "invalid_client", "`client_secret`"),
    ],
)
async def test_a_refused_exchange_names_the_authorization_servers_error_and_what_to_do(
    guarded: str,
    idp: IdentityProvider,
    tmp_path: Path,
    auth: dict[str, str],
    jwt_claims: dict[str, str],
    error: str,
    advice: str,
) -> None:
    config = exchange_server(guarded, **auth)
    pool = built(Grants(lambda: {"forge": config}, LocalTokens(tmp_path / "tokens")), config)
    assert isinstance(pool, Pool)
    async with pool.running():
        with pytest.raises(ExchangeRefused) as refused:
            await whoami_as(pool, caller(idp, "erin", **jwt_claims))
        assert pool.processes == 0
    text = str(refused.value)
    assert f"{guarded}/token" in text and error in text and advice in text, text
    assert "erin" in text and "forge" in text


async def test_an_unreachable_token_endpoint_is_named_with_why(
    guarded: str, idp: IdentityProvider, tmp_path: Path
) -> None:
    closed = f"http://127.0.0.1:{free_port()}/token"
    config = exchange_server(guarded, token_endpoint=closed)
    pool = built(Grants(lambda: {"forge": config}, LocalTokens(tmp_path / "tokens")), config)
    assert isinstance(pool, Pool)
    async with pool.running():
        with pytest.raises(ExchangeRefused) as refused:
            await whoami_as(pool, caller(idp, "gina"))
    assert f"Could not reach the token endpoint of forge ({closed}) to exchange gina's token" in str(refused.value)


async def test_the_configured_scopes_are_asked_for(guarded: str, idp: IdentityProvider, tmp_path: Path) -> None:
    config = exchange_server(guarded, scopes=["repo:read", "issues:write"])
    pool = built(Grants(lambda: {"forge": config}, LocalTokens(tmp_path / "tokens")), config)
    assert isinstance(pool, Pool)
    async with pool.running():
        assert await whoami_as(pool, caller(idp, "frank")) == "frank"
    assert (await admin(guarded, "ttl", s=3600))["last_scope"] == "repo:read issues:write"
