"""The one module that reaches into the mcp SDK's private names, and the vocabulary every module shares.

The gateway's lanes and transports need a few things the SDK keeps private: its transport and stream
protocols, its HTTP client factory and origin checks, its trace-context helpers, and the per-era
envelope a client session stamps on each request (and the capabilities it declares there). Everything
else imports them from here, so an SDK upgrade that moves or changes one fails in this file and in
`tests/test_sdk.py`, not in eight places. The names are re-exported unchanged; the envelope stamp
is wrapped so its in-place contract is written down once.

The shared vocabulary (`ProgressFn`, `JsonObject`, `CallTool`, `RequestCtx`) lives here too: aliases of the SDK's
types and protocols every module may import, from a leaf that imports only the SDK.
"""

import math
import secrets
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urljoin

import anyio
import httpx2
import mcp.types as types
from mcp.client._transport import Transport, TransportStreams
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.oauth2 import PKCEParameters
from mcp.client.auth.utils import (
    extract_field_from_www_auth,
    extract_scope_from_www_auth,
    union_scopes,
    validate_authorization_response_iss,
)
from mcp.client.session import ClientSession
from mcp.server import ServerRequestContext
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context
from mcp.server.connection import Connection
from mcp.server.session import ServerSession
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared._compat import resync_tracer
from mcp.shared._context_streams import ContextReceiveStream, ContextSendStream, create_context_streams
from mcp.shared._httpx_utils import create_mcp_http_client, redirect_note, request_within_origin, sse_within_origin
from mcp.shared._otel import extract_trace_context
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.inbound import MCP_NAME_HEADER, encode_header_value
from mcp_types import CLIENT_CAPABILITIES_META_KEY

__all__ = [
    "Connection",
    "ContextReceiveStream",
    "ContextSendStream",
    "HandingOffOAuthProvider",
    "ReadStream",
    "ResumingOAuthProvider",
    "SignInHandedOff",
    "Transport",
    "TransportStreams",
    "WriteStream",
    "absorb_tools",
    "connection_of",
    "create_context_streams",
    "create_mcp_http_client",
    "exchange_code",
    "extract_trace_context",
    "http_session",
    "http_session_in_flight",
    "offer_per_request",
    "redirect_note",
    "request_within_origin",
    "resync_tracer",
    "send_declaring",
    "send_unvalidated",
    "sse_within_origin",
    "stamp_envelope",
    "token_request_record",
]


ProgressFn = ProgressFnT
"""Relays a downstream's progress (progress, total, message) to the client that asked for it."""

JsonObject = dict[str, Any]
"""A JSON object as parsed: tool arguments, params, structured content."""

CallTool = Callable[[str, JsonObject], Awaitable[types.CallToolResult]]
"""Calls a catalog tool by its exposed name through the gateway (hosted tools and version sources use it)."""

RequestCtx = ServerRequestContext[Any]
"""What an SDK request handler receives (the session, the request's meta, the HTTP request if any)."""


OFFER_META_KEY = "gateway/offer"
"""Private `_meta` key of an outgoing 2026-era request: the `sampling`, `elicitation` and `roots` client
capabilities it declares (the calling client's; keys absent are not declared). `offer_per_request`'s stamp takes
it out before the request leaves, so it travels with the request instead of beside it."""
ASKABLE = ("sampling", "elicitation", "roots")


def offer_per_request(session: ClientSession) -> None:
    """Make `session`'s 2026-era requests declare, in place of the session's own `sampling`, `elicitation` and
    `roots` capabilities, those their `_meta` carries under `OFFER_META_KEY` (the envelope carries capabilities
    per request; the SDK stamps the session's). Call once the session is connected: its stamp is chosen by the
    handshake."""
    stamp = session._stamp

    def stamped(data: dict[str, Any], opts: Any) -> None:
        params = data.get("params") or {}
        meta = params.get("_meta")
        offered = meta.pop(OFFER_META_KEY, None) if isinstance(meta, dict) else None
        if isinstance(meta, dict) and not meta:
            del params["_meta"]
        stamp(data, opts)
        meta = (data.get("params") or {}).get("_meta")
        if offered is None or meta is None or CLIENT_CAPABILITIES_META_KEY not in meta:
            return  # not narrowed, or the handshake era (declared once, at initialize)
        own = {k: v for k, v in meta[CLIENT_CAPABILITIES_META_KEY].items() if k not in ASKABLE}
        meta[CLIENT_CAPABILITIES_META_KEY] = {**own, **offered}

    session._stamp = stamped


def stamp_envelope(session: ClientSession, message: dict[str, Any]) -> dict[str, Any]:
    """Add what the session's negotiated era requires to an outgoing request, as the SDK itself would.

    `message` is `{"method": ..., "params": {...}}`; the SDK's `_stamp` mutates `message["params"]` in
    place (in the 2026-07-28 era it adds `_meta` with the protocol version, client info and
    capabilities; in the handshake era nothing). Returns the (same) params for convenience.
    """
    session._stamp(message, {})
    params: dict[str, Any] = message["params"]
    return params


def http_session(
    manager: StreamableHTTPSessionManager, session_id: str, user: Any
) -> StreamableHTTPServerTransport | None:
    """The live handshake-era session `session_id` if the request's principal may use it, else None.

    The same decision the manager makes before it hands a request to a session (`_handle_stateful_request`):
    the session is known and not terminated or expiring, and `user` (the ASGI scope's "user") is the
    principal that opened it (both None without authentication). On None the caller lets the SDK answer
    (404 for an unknown session or another principal's, as if it did not exist).
    """
    transport = manager._server_instances.get(session_id)
    if transport is None or transport.is_terminated:
        return None
    if transport.idle_scope is not None and transport.idle_scope.cancel_called:
        return None
    requestor = authorization_context(user) if isinstance(user, AuthenticatedUser) else None
    if requestor != manager._session_owners.get(session_id):
        return None
    return transport


@contextmanager
def http_session_in_flight(transport: StreamableHTTPServerTransport) -> Iterator[None]:
    """Hold the session as a request in flight does (`StreamableHTTPServerTransport.handle_request`): its idle
    countdown is suspended, and restarts when the last request in flight ends."""
    scope, timeout = transport.idle_scope, transport._idle_timeout
    if scope is None or timeout is None:
        yield
        return
    transport._requests_in_flight += 1
    scope.deadline = math.inf
    try:
        yield
    finally:
        transport._requests_in_flight -= 1
        if not transport._requests_in_flight:
            scope.deadline = anyio.current_time() + timeout


def connection_of(session: ServerSession) -> Connection:
    """The connection a handler's `ctx.session` is a per-request view of: it lives exactly as long as the client's
    connection (a handshake-era HTTP session ends with DELETE or expiry), so per-session state can follow it."""
    return session._connection


async def send_unvalidated(session: ClientSession, request: Any, *, timeout_s: float) -> dict[str, Any]:
    """`session.send_request` (same envelope stamp, same dispatcher) but the raw result, not checked against the
    spec: the SDK validates a whole listing page at once, so one tool without an `inputSchema` would fail every
    tool of its server; the caller reads the entries one by one instead.

    Raises:
        MCPError: error response, read timeout, or connection closed (as `send_request`).
    """
    return await _send_raw(session, request.model_dump(by_alias=True, mode="json", exclude_none=True), timeout_s)


async def send_declaring(
    session: ClientSession, method: str, params: dict[str, Any], *, extension: str, timeout_s: float, name: str | None
) -> dict[str, Any]:
    """A raw 2026-era request (as `send_unvalidated`) whose envelope also declares the client `extension`, with
    `Mcp-Name: name` when given (the tasks extension requires it on `tasks/*` over HTTP).

    Raises:
        MCPError: error response, read timeout, or connection closed (as `send_request`).
    """

    def declaring(data: dict[str, Any], opts: Any) -> None:
        declared = data["params"].get("_meta", {}).get(CLIENT_CAPABILITIES_META_KEY)
        if isinstance(declared, dict):
            declared["extensions"] = {**declared.get("extensions", {}), extension: {}}
        if name is not None:
            opts.setdefault("headers", {})[MCP_NAME_HEADER] = encode_header_value(name)

    return await _send_raw(session, {"method": method, "params": params}, timeout_s, declaring)


async def _send_raw(
    session: ClientSession,
    data: dict[str, Any],
    timeout_s: float,
    amend: Callable[[dict[str, Any], Any], None] | None = None,
) -> dict[str, Any]:
    """Send a request dict as `send_request` does (the session's envelope stamp, its dispatcher), `amend`ed after
    the stamp; the raw result."""
    opts: Any = {}
    session._stamp(data, opts)
    if amend is not None:
        amend(data, opts)
    opts["timeout"] = timeout_s
    raw = await session._dispatcher.send_raw_request(data["method"], data.get("params"), opts)
    return dict(raw)


def absorb_tools(session: ClientSession, tools: list[types.Tool]) -> list[types.Tool]:
    """`tools` (a server's whole listing) as the SDK's own `list_tools` keeps them on a 2026-era session: a tool whose
    `x-mcp-header` annotations are invalid is left out (the spec's MUST), and each kept tool's annotated arguments
    are mirrored into `Mcp-Param-*` headers on its calls. The gateway reads listings raw, entry by entry
    (`send_unvalidated`), so the SDK never saw them. A handshake-era session keeps them all and mirrors nothing."""
    listing = types.ListToolsResult(tools=list(tools))
    session._absorb_tool_listing(listing, complete=True)
    return listing.tools


PATCHED = ((StreamableHTTPServerTransport, "_terminate_unanswered_request"),)
"""Every SDK attribute the gateway replaces process-wide (`unanswered_cancels`), pinned in tests/test_sdk.py."""


def unanswered_cancels() -> None:
    """A cancelled 2025-era request over Streamable HTTP ends its SSE stream with no answer, as the spec asks of
    a receiver of `notifications/cancelled`. The SDK writes REQUEST_CANCELLED there so that a resuming client's
    replay ends too; the gateway keeps no event store (no replay), so it has nothing to end. A JSON-response
    POST must carry a body: that mode keeps the SDK's answer. Idempotent (the class is patched once)."""
    transport = StreamableHTTPServerTransport
    original = transport._terminate_unanswered_request
    if getattr(original, "gateway_unanswered", False):
        return

    async def terminate(self: StreamableHTTPServerTransport, request_id: Any) -> None:
        if self.is_json_response_enabled or self._event_store is not None:
            await original(self, request_id)
            return
        self.close_sse_stream(str(request_id))

    terminate.gateway_unanswered = True  # type: ignore[attr-defined]
    transport._terminate_unanswered_request = terminate  # type: ignore[method-assign]


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
    this is the flow's planned end (`OAuth.begin` takes it)."""


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
