"""The SDK's OAuth client as the gateway runs it (`gateway.downstreams.oauth_sdk`), against a real authorization
server and MCP server (`tests/servers/guarded.py`): stored tokens' expiry is read, so concurrent first calls share
one refresh; a 401 to a token that looked good is met by a refresh, not a new sign-in; a step-up asks for the wider
scope and keeps the narrower grant until then. And every private method of the SDK's provider that `oauth_sdk`
overrides or calls is still there, taking what it passes."""

import ast
import inspect
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import anyio
import pytest
from cryptography.fernet import Fernet
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import OAuthClientMetadata
from pydantic import AnyUrl

from gateway.downstreams import oauth_sdk
from gateway.downstreams.oauth import OAuth
from gateway.downstreams.oauth_providers import SignInNeeded
from gateway.downstreams.oauth_tokens import SealedTokens
from gateway.downstreams.pool import Pool
from gateway.store.local.tokens import LocalTokens
from tests.downstreams.oauth_harness import ALICE, GATEWAY, admin, browse, sign_in, whoami

pytestmark = pytest.mark.anyio
PINNED = {
    "_initialize": (["self"], "coroutine"),
    "_auth_flow": (["self", "request"], "async generator"),
    "_refresh_token": (["self"], "coroutine"),
    "_handle_refresh_response": (["self", "response"], "coroutine"),
    "_add_auth_header": (["self", "request"], "function"),
    "_perform_authorization_code_grant": (["self"], "coroutine"),
    "_exchange_token_authorization_code": (["self", "auth_code", "code_verifier"], "coroutine"),
    "_handle_token_response": (["self", "response"], "coroutine"),
}
"""The private methods of `OAuthClientProvider` that `oauth_sdk` overrides or calls: their parameters as it calls
them (or as the SDK calls its overrides), and whether they are awaited, iterated or called."""


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
    assert after["refused"] - before["refused"] == 1  # the refused request was not sent again before the refresh


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


async def test_a_step_up_the_serving_gateway_met_is_signed_in_for_by_gateway_login_in_another_process(
    running: tuple[OAuth, Pool, LocalTokens], guarded: str
) -> None:
    # `gateway login` is another process on the same token store: nothing of the serving gateway's memory reaches it.
    oauth, pool, store = running
    config = oauth.servers["forge"]
    with anyio.fail_after(60):
        await sign_in(oauth, ALICE)
        with pytest.raises(SignInNeeded):  # `vault` wants scope admin: 403 insufficient_scope
            await whoami(pool, ALICE, "vault")
        async with OAuth(lambda: {"forge": config}, LocalTokens(store.folder), GATEWAY) as login:
            assert await login.standing("forge", ALICE.owner) == "needed"
            url, browser = await login.begin("forge", ALICE)  # not "signed in already": it asks for the union
            assert url is not None and {"admin"} <= set(parse_qs(urlparse(url).query)["scope"][0].split())
            back = await browse(url, "alice")
            assert await login.finish(back["state"], back["code"], None, browser) == ("forge", ALICE)
        assert await oauth.standing("forge", ALICE.owner) == "signed in"
        assert await whoami(pool, ALICE, "vault") == "alice"
    assert not any(b"admin" in path.read_bytes() for path in store.folder.iterdir())  # sealed like the tokens


def kind_of(method: object) -> str:
    if inspect.isasyncgenfunction(method):
        return "async generator"
    return "coroutine" if inspect.iscoroutinefunction(method) else "function"


def test_every_private_method_of_the_sdk_provider_that_oauth_sdk_uses_is_still_there_as_it_uses_it(
    tmp_path: Path,
) -> None:
    # Any private name of the SDK's provider that `oauth_sdk.py` reads must be pinned here: a new use, or one the
    # SDK renamed away (then no longer found on its class), fails until this list says what it is.
    tree = ast.parse(Path(inspect.getfile(oauth_sdk)).read_text())
    read = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    overridden = {n.name for c in tree.body if isinstance(c, ast.ClassDef) for n in c.body if hasattr(n, "name")}
    private = {name for name in read | overridden if name.startswith("_") and not name.startswith("__")}
    assert {name for name in private if callable(getattr(OAuthClientProvider, name, None))} == set(PINNED)
    for name, (parameters, kind) in PINNED.items():
        method = getattr(OAuthClientProvider, name)
        assert (list(inspect.signature(method).parameters), kind_of(method)) == (parameters, kind), name
    # `ResumingOAuthProvider` also sets the SDK's own flag that has its flow load the stored tokens again.
    storage = SealedTokens(LocalTokens(tmp_path), Fernet(Fernet.generate_key()), ALICE, "forge")
    metadata = OAuthClientMetadata(redirect_uris=[AnyUrl("http://127.0.0.1/oauth/callback")])
    assert OAuthClientProvider("http://127.0.0.1/mcp", metadata, storage)._initialized is False
    assert "if not self._initialized:" in inspect.getsource(OAuthClientProvider._auth_flow)
