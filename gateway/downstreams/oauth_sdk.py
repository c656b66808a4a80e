"""The SDK's OAuth client (`mcp.client.auth.OAuthClientProvider`) as the gateway runs it: the one place its private
methods are overridden or called (the OAuth part of `gateway.sdk`, kept apart for size). Why each is needed is said
where it is done: stored tokens' expiry, a refresh before a re-authorization, a step-up that keeps the grant, and a
sign-in handed off between its two halves so any replica may finish it."""

import secrets
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl, urlencode, urljoin

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.oauth2 import PKCEParameters
from mcp.client.auth.utils import (
    extract_field_from_www_auth,
    extract_scope_from_www_auth,
    union_scopes,
    validate_authorization_response_iss,
)

from gateway.sdk import create_mcp_http_client


class ResumingOAuthProvider(OAuthClientProvider):
    """The SDK's OAuth client, refreshing wherever a refresh can do instead of a person's sign-in:

    - Its `_initialize` loads stored tokens without an expiry, so a stored token past its end would be sent, answered
      401 and met with a full re-authorization instead of a refresh. The storage's `expires_in` counts from the moment
      it is read.
    - A 401 to a token that looked good (the server ended it early: a restart, a key rotation) goes to the SDK's full
      re-authorization; with a refresh token in hand, the refresh is tried first and the request sent again, and only
      if that fails does the SDK's flow see the 401.
    - A 403 `insufficient_scope` (a step-up) would have the SDK drop nothing but wait, in the connection, for a
      person to re-authorize. With `stepped_up`, it is told the scope wanted (the SDK's union of what was asked,
      granted and challenged) and the 403 is the request's answer; the grant stays for what it covers, and the next
      request reads the stored tokens again (the wider grant, once the person signed in for it).
    """

    def __init__(
        self, *args: Any, stepped_up: Callable[[str | None], Awaitable[None]] | None = None, **kw: Any
    ) -> None:
        super().__init__(*args, **kw)
        self._stepped_up = stepped_up
        self._narrow: str | None = None
        """The access token a step-up found too narrow: until the stored one differs, each request reads storage."""

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The SDK's flow (`_auth_flow` below), but a request with a valid token in hand, no flow under way and no
        step-up pending goes out with its header at once: the three nested flows and the lock per request were a
        measurable part of every call's cost (bench/oauth_latency.py). A 401 or 403 is then handed to the whole flow
        as the answer to the request it would have sent, if it would have sent that very request (same token):
        refresh, step-up and sign-in are the SDK's flow's as before, and nothing is sent twice."""
        sent = self._sent_at_once(request)
        response = None
        if sent is not None:
            response = yield request
            if response.status_code not in (401, 403):
                return
        flow = super().async_auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            if (
                response is not None
                and outgoing is request
                and request.headers.get("Authorization") == f"Bearer {sent}"  # as `_add_auth_header` puts it
            ):
                outgoing = await flow.asend(response)
            while True:
                outgoing = await flow.asend((yield outgoing))
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()

    def _sent_at_once(self, request: httpx2.Request) -> str | None:
        """The access token put on `request` (as the flow would put it) if it may skip the flow, else None.

        No header of the request is read: the first read decodes all of them (httpx2's `Headers.encoding`) and was
        most of this path's cost (bench/oauth_latency.py). The protocol version the SDK's flow reads from them is for
        its discovery and sign-in, and the flow reads it itself before those (`_auth_flow`)."""
        context, tokens = self.context, self.context.current_tokens
        if not self._initialized or self._narrow is not None or context.lock.locked() or not context.is_token_valid():
            return None
        self._add_auth_header(request)
        return None if tokens is None else tokens.access_token  # a valid token is never None

    async def _initialize(self) -> None:
        await super()._initialize()
        if self.context.current_tokens is not None:
            self.context.update_token_expiry(self.context.current_tokens)

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        if self._narrow is not None:  # the person may have signed in for more since (on any replica)
            async with self.context.lock:
                await self._initialize()
                self._initialized = True
                tokens = self.context.current_tokens
                if tokens is None or tokens.access_token != self._narrow:
                    self._narrow = None
        flow = super()._auth_flow(request)
        refreshed = False
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                if outgoing is request and self._stepped_up is not None and _insufficient_scope(response):
                    granted = self.context.current_tokens.scope if self.context.current_tokens else None
                    asked = union_scopes(self.context.client_metadata.scope, granted)
                    await self._stepped_up(union_scopes(asked, extract_scope_from_www_auth(response)))
                    self._narrow = self.context.current_tokens.access_token if self.context.current_tokens else None
                    return
                if outgoing is request and response.status_code == 401 and not refreshed:
                    refreshed = True  # once: a server that refuses every token is the SDK's to handle
                    if self.context.can_refresh_token():  # under the SDK's lock: its flow waits at this yield
                        refreshing = await self._refresh_token()
                        if await self._handle_refresh_response((yield refreshing)):
                            self._add_auth_header(request)
                            response = yield request
                        else:
                            self._initialized = False  # as the SDK does after a failed refresh
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()


class SignInHandedOff(BaseException):
    """A sign-in's authorization request is out (`HandingOffOAuthProvider`): its callback finishes it, wherever it
    lands. Not an `Exception`: the SDK logs every `Exception` out of its flow as an error with its traceback, and
    this is the flow's planned end (`SigningIn.begin` takes it)."""


class HandingOffOAuthProvider(ResumingOAuthProvider):
    """The SDK's flow up to the person's redirect, for a sign-in whose callback may reach another replica.

    The SDK makes the PKCE verifier and state in `_perform_authorization_code_grant` and keeps them in locals while
    it waits, in this process, for the callback. Here the same authorization request is made (the SDK's parameters,
    its resource and scope rules), and `authorized(url, state, verifier, token_request)` is told it with the token
    request the SDK would send (without its code): kept in the shared store, it lets any replica finish
    (`exchange_code`). The flow then ends with `SignInHandedOff`.
    """

    def __init__(
        self,
        *args: Any,
        authorized: Callable[[str, str, str, httpx2.Request], Awaitable[None]],
        wanted_scope: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._authorized = authorized
        self._wanted_scope = wanted_scope
        """A step-up's scope (`ResumingOAuthProvider`'s `stepped_up`), asked for beside what the SDK would ask."""

    async def _perform_authorization_code_grant(self) -> tuple[str, str]:
        context = self.context
        assert context.client_info is not None and context.client_metadata.redirect_uris is not None
        metadata = context.oauth_metadata
        if metadata is not None and metadata.authorization_endpoint:
            endpoint = str(metadata.authorization_endpoint)
        else:
            endpoint = urljoin(context.get_authorization_base_url(context.server_url), "/authorize")
        pkce, state = PKCEParameters.generate(), secrets.token_urlsafe(32)
        params = {
            "response_type": "code",
            "client_id": context.client_info.client_id,
            "redirect_uri": str(context.client_metadata.redirect_uris[0]),
            "state": state,
            "code_challenge": pkce.code_challenge,
            "code_challenge_method": "S256",
        }
        if context.should_include_resource_param(context.protocol_version):
            params["resource"] = context.get_resource_url()  # RFC 8707
        context.client_metadata.scope = union_scopes(context.client_metadata.scope, self._wanted_scope)
        if context.client_metadata.scope:
            params["scope"] = context.client_metadata.scope
            if "offline_access" in context.client_metadata.scope.split():
                params["prompt"] = "consent"  # as the SDK: OIDC asks consent for offline access
        token_request = await self._exchange_token_authorization_code("", pkce.code_verifier)
        await self._authorized(f"{endpoint}?{urlencode(params)}", state, pkce.code_verifier, token_request)
        raise SignInHandedOff


def _insufficient_scope(response: httpx2.Response) -> bool:
    return response.status_code == 403 and extract_field_from_www_auth(response, "error") == "insufficient_scope"


async def exchange_code(
    provider: OAuthClientProvider, token_request: dict[str, Any], code: str, iss: str | None
) -> None:
    """Finish a sign-in `HandingOffOAuthProvider` began (perhaps on another replica): the callback's issuer checked
    against the authorization server's metadata (RFC 9207), the code exchanged by the token request kept then, and
    the tokens handled (kept in `provider`'s storage) as the SDK does. Raises the SDK's OAuth errors."""
    validate_authorization_response_iss(iss, provider.context.oauth_metadata)
    data = {**token_request["data"], "code": code}
    request = httpx2.Request("POST", token_request["url"], data=data, headers=token_request["headers"])
    async with create_mcp_http_client() as http:
        response = await http.send(request)
        await provider._handle_token_response(response)


def token_request_record(request: httpx2.Request) -> dict[str, Any]:
    """A token request as JSON to keep: its URL, headers (a client secret may be among them) and form fields."""
    headers = {k: v for k, v in request.headers.items() if k.lower() in ("content-type", "authorization")}
    return {"url": str(request.url), "headers": headers, "data": dict(parse_qsl(request.content.decode()))}
