"""HTTP identity: an ASGI middleware that turns the `Authorization` header into the request's `Identity`,
the RFC 9728 protected-resource metadata, and `/healthz` (bare liveness for anyone, details for callers
who pass auth and the Host/Origin checks).

A refused request gets 401 (403 for missing scopes, 503 when the issuer's keys cannot be had) with a
`WWW-Authenticate: Bearer` challenge naming the metadata, so an MCP client can discover the issuer and
sign the user in. An accepted one carries its identity in the scope (`IDENTITY_SCOPE`) and, for the
SDK, as `scope["user"]`: the SDK's session managers bind each handshake-era session to the principal
that opened it and answer 404 to anyone else.
"""

import hashlib
import logging
import re
from collections.abc import Callable
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from pydantic import AnyHttpUrl
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.errors import jsonrpc_error
from gateway.fronts.auth.bearer import Authenticator
from gateway.fronts.auth.callers import IDENTITY_SCOPE
from gateway.fronts.auth.local import Locality
from gateway.fronts.auth.refusal import Refused
from gateway.fronts.auth.signins import PageSignIns
from gateway.fronts.respond import respond_json
from gateway.session import Identity
from gateway.store.base import StoreUnavailable
from gateway.telemetry.repeats import Repeating

logger = logging.getLogger(__name__)
_strangers = Repeating(logger)

METADATA_PATH = "/.well-known/oauth-protected-resource"
PUBLIC = frozenset({"/healthz", "/ui/login", "/ui/logout", "/oauth/callback"})
"""Paths served without credentials (they answer less without them; the page's sign-in form, and its sign-out,
which a browser whose sign-in ended may still send; the end of a sign-in to an OAuth server, which its browser
cookie and state prove, `fronts.connect`)."""
PUBLIC_TO_ALL = frozenset({"/healthz"})
"""Of those, what a caller from elsewhere gets without auth: the bare liveness a balancer probes."""
MCP_PATHS = ("/mcp", "/sse", "/messages/")
"""The MCP endpoints (by prefix): without auth they answer whoever the listen address lets reach them (the
operator's choice; `listen.host` is loopback unless changed)."""
PUBLIC_PREFIX = ("/ui/static/", "/connect/")
"""The page's stylesheet, script and icon: the same for everyone, holding no data; a sign-in link to an OAuth
server, whose single-use ticket stands for the person (`fronts.connect`)."""
PAGE_COOKIE = "gateway_page"
"""The page's sign-in cookie: a random id the store binds to an identity (`gateway.fronts.auth.signins`; HttpOnly,
SameSite=Strict, Path=/ui), for a browser that cannot send an Authorization header; read for the page's paths
only, never for /mcp. Never the token."""
_UNSAFE = re.compile(r'[^\x20-\x7e]|["\\]')


def access_token(identity: Identity) -> AccessToken:
    """The SDK's view of the principal, for its session-owner checks; holds no token, only who it is."""
    digest = hashlib.sha256(identity.key.encode()).hexdigest()[:32]
    return AccessToken(
        token=f"identity:{digest}",
        client_id=identity.key,
        scopes=sorted(identity.scopes),
        subject=identity.subject,
        claims={"iss": identity.issuer} if identity.issuer else None,
    )


class Authenticate:
    def __init__(
        self,
        app: ASGIApp,
        authenticator: Authenticator,
        *,
        resource_url: str | None = None,
        locality: Locality | None = None,
        signins: PageSignIns | None = None,
    ) -> None:
        self.app = app
        self.authenticator = authenticator
        self.metadata_url = None if resource_url is None else str(build_resource_metadata_url(AnyHttpUrl(resource_url)))
        self.locality = locality or Locality()
        """Without auth: who is on this machine, the only callers of everything but MCP and the bare health."""
        self.signins = signins
        """The page's sign-ins, by the cookie `/ui/login` sets (None: the page's cookie is not read)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(METADATA_PATH):
            await self.app(scope, receive, send)
            return
        if not self.authenticator.required and not scope["path"].startswith(MCP_PATHS):
            who = self.locality.stranger(scope)
            if who is not None:
                await self._stranger(scope, receive, send, who)
                return
        header = next((v for k, v in scope["headers"] if k == b"authorization"), None)
        if header is None and self.signins is not None and scope["path"].startswith("/ui"):
            cookie = _page_cookie(scope)
            if cookie is not None and self.authenticator.required:
                try:
                    signed_in = await self.signins.identity(cookie)
                except StoreUnavailable as exc:
                    message = f"The page's sign-in could not be checked: {exc}. Retry shortly, or sign in again."
                    await respond_json(send, jsonrpc_error(None, -32001, message), 503)
                    return
                if signed_in is not None:
                    await self._admit(scope, receive, send, signed_in)
                    return
        try:
            identity = await self.authenticator.identify(None if header is None else header.decode("latin-1"))
        except Refused as refused:
            if scope["path"] in PUBLIC or scope["path"].startswith(PUBLIC_PREFIX):
                await self.app(scope, receive, send)  # without an identity: the public answer
                return
            logger.info("refused %s %s: %s", scope["method"], scope["path"], refused.description)
            if _browsing(scope) and refused.status == 401:  # a person at a browser: the sign-in form, not JSON-RPC
                await RedirectResponse("/ui/login", status_code=303)(scope, receive, send)
                return
            await self._refuse(send, refused)
            return
        await self._admit(scope, receive, send, identity)

    async def _admit(self, scope: Scope, receive: Receive, send: Send, identity: Identity) -> None:
        scope[IDENTITY_SCOPE] = identity
        if identity.kind != "anonymous":
            scope["user"] = AuthenticatedUser(access_token(identity))
        await self.app(scope, receive, send)

    async def _stranger(self, scope: Scope, receive: Receive, send: Send, who: str) -> None:
        """Without auth, a caller not on this machine: the bare health answer, else 403 saying what would open it."""
        if scope["path"] in PUBLIC_TO_ALL:
            await self.app(scope, receive, send)  # without an identity: the public answer
            return
        path = scope["path"] if len(scope["path"]) <= 100 else scope["path"][:97] + "..."
        message = (
            f"{scope['method']} {path} refused for {who}: this gateway has no auth configured, so the page, /metrics, "
            "/reload and /healthz's details answer callers on this machine only. Configure auth.tokens or auth.jwt "
            "to open them to others; a proxy on this machine that forwards local callers goes in "
            "listen.trusted_proxies."
        )
        _strangers.warning("refused callers not on this machine (no auth configured); the latest: %s", message)
        await respond_json(send, jsonrpc_error(None, -32001, message), 403)

    async def _refuse(self, send: Send, refused: Refused) -> None:
        challenge = ['realm="mcp-gateway"']
        if self.metadata_url is not None:
            challenge.append(f'resource_metadata="{self.metadata_url}"')
        if refused.error is not None:
            challenge.append(f'error="{refused.error}"')
            challenge.append(f'error_description="{_header_text(refused.description)}"')
        if refused.scope is not None:
            challenge.append(f'scope="{refused.scope}"')
        message = f"{refused.description[:1].upper()}{refused.description[1:]}."
        headers = [(b"www-authenticate", ("Bearer " + ", ".join(challenge)).encode("latin-1", "replace"))]
        if refused.retry_after_s is not None:
            headers.append((b"retry-after", str(refused.retry_after_s).encode()))
        await respond_json(send, jsonrpc_error(None, -32001, message), refused.status, headers)


def _browsing(scope: Scope) -> bool:
    """A browser opening one of the page's tabs (a GET asking for HTML), which a 401 body would leave stranded."""
    if scope["method"] != "GET" or not scope["path"].startswith("/ui"):
        return False
    accept = next((v for k, v in scope["headers"] if k == b"accept"), b"")
    return b"text/html" in accept


def _page_cookie(scope: Scope) -> str | None:
    """The page's sign-in id from the request's cookie, if it carries one."""
    header: bytes
    for key, header in scope["headers"]:
        if key == b"cookie":
            for part in header.split(b";"):
                name, _, found = part.strip().partition(b"=")
                if name == PAGE_COOKIE.encode() and found:
                    return found.decode("latin-1")
    return None


def _header_text(text: str, limit: int = 400) -> str:
    """`text` fit for a quoted header value: one line of printable ASCII without quotes or backslashes. A line
    break or control character in a header makes the server drop the connection without any answer."""
    flat = _UNSAFE.sub(lambda m: "'" if m.group() in '"\\' else "?", " ".join(text.split()))
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def metadata_routes(resource_url: str, authorization_servers: list[str], scopes: list[str]) -> list[Route]:
    """RFC 9728 metadata at `/.well-known/oauth-protected-resource/<resource path>` (§3.1) and at the root path."""
    routes = create_protected_resource_routes(
        AnyHttpUrl(resource_url),
        [AnyHttpUrl(server) for server in authorization_servers],
        scopes_supported=scopes or None,
        resource_name="mcp-gateway",
    )
    if routes[0].path != METADATA_PATH:
        routes.append(Route(METADATA_PATH, endpoint=routes[0].endpoint, methods=["GET", "OPTIONS"]))
    return routes


def health_route(health: Callable[[], dict[str, Any]], security: TransportSecurityMiddleware) -> Route:
    """`GET /healthz`: `{"status"}` for anyone (load balancers); the servers' details (states, last errors
    with local paths) only for a caller whose request passed auth and whose Host/Origin the gateway accepts."""

    async def healthz(request: Request) -> JSONResponse:
        report = health()
        trusted = IDENTITY_SCOPE in request.scope and _accepted(security.settings, request)
        # 503 once a component task died (`died`): the process no longer does what its config says; restart it.
        status = 503 if "died" in report else 200
        return JSONResponse(report if trusted else {"status": report["status"]}, status_code=status)

    return Route("/healthz", healthz)


def _accepted(settings: TransportSecuritySettings, request: Request) -> bool:
    """The SDK's Host/Origin check (exact, or `name:*` for any port) without its warning per refused value: a
    balancer's probe (every second, with a Host of its own) only gets the bare answer, and is no attack."""

    def allowed(value: str, patterns: list[str]) -> bool:
        return value in patterns or any(p.endswith(":*") and value.startswith(p[:-1]) for p in patterns)

    if not settings.enable_dns_rebinding_protection:
        return True
    host, origin = request.headers.get("host", ""), request.headers.get("origin")
    return allowed(host, settings.allowed_hosts) and (not origin or allowed(origin, settings.allowed_origins))
