"""Test server: an OAuth-protected MCP server and its authorization server, in one process on one port.

The authorization server is real OAuth 2.1 as an MCP server's would be: metadata (RFC 8414, RFC 9728), dynamic client
registration (RFC 7591), an authorization endpoint that approves the user named by `login_hint` (default alice) at
once, a token endpoint that checks PKCE (S256), the redirect URI and the resource indicator (RFC 8707), and rotates
refresh tokens. `/mcp` answers only a bearer token it issued and that has not expired (else 401 naming its metadata);
its tool `whoami` says whose token the call carried, and `vault` does so only for a grant of scope `admin` (else 403
`insufficient_scope`, a step-up). `/admin/*` lets a test count refreshes, shorten token lifetimes,
revoke a user's grants or end their access tokens early.

Two grants without a browser: token exchange (RFC 8693), which trades a JWT of the identity provider named by
`--jwks`/`--jwt-issuer`/`--jwt-audience` (signature, `iss`, `aud`, `exp` checked) for a token of its subject, and client
credentials, whose token stands for the client itself (`service:<client_id>`). Both need the confidential client of
`CLIENTS` (HTTP Basic) and issue no refresh token.
"""

import argparse
import base64
import contextlib
import hashlib
import json
import secrets
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlencode

import anyio
import jwt
import mcp.types as types
import uvicorn
from mcp.server import Server, ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from tests.servers.holder import PortReportingServer

EMPTY: dict[str, Any] = {"type": "object", "properties": {}}
EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
SUBJECT_TYPES = {"urn:ietf:params:oauth:token-type:jwt", "urn:ietf:params:oauth:token-type:access_token"}
CLIENTS = {"gateway": "gateway-secret"}
"""The confidential clients registered by hand: client id -> secret."""


class Authority:
    def __init__(self) -> None:
        self.base = ""
        self.clients: dict[str, dict[str, Any]] = {}
        self.codes: dict[str, dict[str, Any]] = {}
        self.access: dict[str, dict[str, Any]] = {}
        self.refresh: dict[str, dict[str, Any]] = {}
        self.ttl_s = 3600
        self.counts = {
            "registrations": 0,
            "authorizations": 0,
            "codes_redeemed": 0,
            "refreshes": 0,
            "exchanges": 0,
            "client_credentials": 0,
            "refused": 0,  # requests to /mcp answered 401
        }
        self.issued: list[str] = []
        """Every access token issued, for a test to look for where none may appear (`/admin/issued`)."""
        self.last_scope: str | None = None
        """The scope the latest grant without a browser asked for."""
        self.keys: jwt.PyJWKClient | None = None
        """The identity provider whose JWTs token exchange accepts (None: it accepts none)."""
        self.jwt_issuer, self.jwt_audience = "", ""

    def issue(self, grant: dict[str, Any], *, refresh: bool = True) -> dict[str, Any]:
        access = secrets.token_urlsafe(24)
        self.access[access] = {**grant, "exp": time.time() + self.ttl_s}
        issued: dict[str, Any] = {"access_token": access, "token_type": "Bearer", "expires_in": self.ttl_s}
        self.issued.append(access)
        if refresh:
            issued["refresh_token"] = secrets.token_urlsafe(24)
            self.refresh[str(issued["refresh_token"])] = grant
        return {**issued, "scope": grant["scope"]} if grant.get("scope") else issued

    def client_of(self, request: Request) -> str | None:
        """The confidential client the request authenticates as (HTTP Basic), None if none or a wrong secret."""
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "basic":
            return None
        client_id, _, secret = base64.b64decode(value).decode().partition(":")
        client_id, secret = unquote(client_id), unquote(secret)
        return client_id if CLIENTS.get(client_id) == secret else None

    async def grant_without_browser(self, request: Request, form: Any) -> Response:
        client = self.client_of(request)
        self.last_scope = None if form.get("scope") is None else str(form.get("scope"))
        if client is None:
            return JSONResponse({"error": "invalid_client", "error_description": "unknown client or secret"}, 401)
        if form.get("grant_type") == "client_credentials":
            if form.get("resource") != f"{self.base}/mcp":
                return JSONResponse({"error": "invalid_target"}, 400)
            self.counts["client_credentials"] += 1
            return JSONResponse(self.issue({"user": f"service:{client}", "client_id": client}, refresh=False))
        if f"{self.base}/mcp" not in (form.get("resource"), form.get("audience")):
            why = f"this server issues tokens for {self.base}/mcp only"
            return JSONResponse({"error": "invalid_target", "error_description": why}, 400)
        if form.get("subject_token_type") not in SUBJECT_TYPES or self.keys is None:
            return JSONResponse(
                {"error": "invalid_request", "error_description": "unsupported subject_token_type"}, 400
            )
        subject = str(form.get("subject_token", ""))
        try:
            key = await anyio.to_thread.run_sync(self.keys.get_signing_key_from_jwt, subject)
            claims = jwt.decode(
                subject, key.key, algorithms=["RS256", "ES256"], audience=self.jwt_audience, issuer=self.jwt_issuer
            )
        except jwt.PyJWTError as exc:
            return JSONResponse({"error": "invalid_grant", "error_description": f"subject_token: {exc}"}, 400)
        self.counts["exchanges"] += 1
        issued = self.issue({"user": claims["sub"], "client_id": client}, refresh=False)
        return JSONResponse({**issued, "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"})

    def grant_of(self, header: str | None) -> dict[str, Any] | None:
        token = (header or "").removeprefix("Bearer ")
        grant = self.access.get(token)
        return None if grant is None or grant["exp"] <= time.time() else grant

    def user_of(self, header: str | None) -> str | None:
        grant = self.grant_of(header)
        return None if grant is None else str(grant["user"])

    async def resource_metadata(self, request: Request) -> Response:
        return JSONResponse({"resource": f"{self.base}/mcp", "authorization_servers": [self.base]})

    async def server_metadata(self, request: Request) -> Response:
        return JSONResponse(
            {
                "issuer": self.base,
                "authorization_endpoint": f"{self.base}/authorize",
                "token_endpoint": f"{self.base}/token",
                "registration_endpoint": f"{self.base}/register",
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials", EXCHANGE],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
            }
        )

    async def register(self, request: Request) -> Response:
        metadata = await request.json()
        client_id = f"client-{secrets.token_hex(4)}"
        self.clients[client_id] = metadata
        self.counts["registrations"] += 1
        return JSONResponse({**metadata, "client_id": client_id, "token_endpoint_auth_method": "none"}, 201)

    async def authorize(self, request: Request) -> Response:
        q = request.query_params
        client = self.clients.get(q.get("client_id", ""))
        if client is None or q.get("redirect_uri") not in client["redirect_uris"]:
            return JSONResponse({"error": "invalid_client"}, 400)
        if q.get("code_challenge_method") != "S256" or q.get("resource") != f"{self.base}/mcp":
            return JSONResponse({"error": "invalid_request", "error_description": "PKCE S256 and resource"}, 400)
        code = secrets.token_urlsafe(16)
        user = q.get("login_hint", "alice")
        self.codes[code] = {"user": user, "client_id": q["client_id"], "code_challenge": q["code_challenge"]}
        self.codes[code]["scope"] = q.get("scope", "")
        self.codes[code]["redirect_uri"] = q["redirect_uri"]
        self.counts["authorizations"] += 1
        return RedirectResponse(f"{q['redirect_uri']}?{urlencode({'code': code, 'state': q.get('state', '')})}", 302)

    async def token(self, request: Request) -> Response:
        form = await request.form()
        if form.get("grant_type") in ("client_credentials", EXCHANGE):
            return await self.grant_without_browser(request, form)
        if form.get("resource") != f"{self.base}/mcp":
            return JSONResponse({"error": "invalid_target"}, 400)
        if form.get("grant_type") == "refresh_token":
            self.counts["refreshes"] += 1
            grant = self.refresh.pop(str(form.get("refresh_token")), None)  # rotated: each is good once
            if grant is None:
                return JSONResponse({"error": "invalid_grant"}, 400)
            return JSONResponse(self.issue(grant))
        pending = self.codes.pop(str(form.get("code")), None)
        verifier = str(form.get("code_verifier", ""))
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        if (
            pending is None
            or pending["code_challenge"] != challenge
            or form.get("redirect_uri") != pending["redirect_uri"]
        ):
            return JSONResponse({"error": "invalid_grant"}, 400)
        self.counts["codes_redeemed"] += 1
        return JSONResponse(self.issue({k: pending[k] for k in ("user", "client_id", "scope")}))

    async def admin(self, request: Request) -> Response:
        match request.path_params["what"]:
            case "ttl":
                self.ttl_s = int(request.query_params["s"])
            case "revoke":
                user = request.query_params["user"]
                for grants in (self.access, self.refresh):
                    for token in [t for t, g in grants.items() if g["user"] == user]:
                        del grants[token]
            case "issued":
                return JSONResponse(self.issued)
            case "end-access":  # a user's access tokens end before their time (a restart); refresh tokens stay good
                user = request.query_params["user"]
                for token in [t for t, g in self.access.items() if g["user"] == user]:
                    del self.access[token]
        return JSONResponse({**self.counts, "last_scope": self.last_scope})


def build(authority: Authority) -> Starlette:
    async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name="whoami", description="Whose token.", input_schema=EMPTY),
                types.Tool(name="vault", description="Whose token, with scope admin.", input_schema=EMPTY),
            ]
        )

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        user = authority.user_of(None if ctx.request is None else ctx.request.headers.get("authorization"))
        return types.CallToolResult(content=[types.TextContent(text=json.dumps({"user": user}))])

    manager = StreamableHTTPSessionManager(app=Server("guarded", on_list_tools=list_tools, on_call_tool=call_tool))
    mcp_app = StreamableHTTPASGIApp(manager)

    class Guarded:  # a class: Starlette runs a plain function as a request handler, not as an ASGI app
        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            headers = {k.decode(): v.decode() for k, v in scope["headers"]}
            metadata = f"{authority.base}/.well-known/oauth-protected-resource/mcp"
            grant = authority.grant_of(headers.get("authorization"))
            if grant is None:
                authority.counts["refused"] += 1
                challenge = f'Bearer error="invalid_token", resource_metadata="{metadata}"'
                refusal = JSONResponse({"error": "invalid_token"}, 401, {"www-authenticate": challenge})
                await refusal(scope, receive, send)
                return
            body, more = b"", True
            while more:  # the whole body, to see which tool is called (then handed on as it came)
                message = await receive()
                body, more = body + message.get("body", b""), message.get("more_body", False)
            if b'"vault"' in body and "admin" not in grant.get("scope", "").split():
                challenge = f'Bearer error="insufficient_scope", scope="admin", resource_metadata="{metadata}"'
                refusal = JSONResponse({"error": "insufficient_scope"}, 403, {"www-authenticate": challenge})
                await refusal(scope, receive, send)
                return
            replayed = False

            async def replay() -> Any:
                nonlocal replayed
                if replayed:
                    return await receive()
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}

            await mcp_app(scope, replay, send)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    return Starlette(
        routes=[
            Route("/.well-known/oauth-protected-resource/mcp", authority.resource_metadata),
            Route("/.well-known/oauth-authorization-server", authority.server_metadata),
            Route("/register", authority.register, methods=["POST"]),
            Route("/authorize", authority.authorize),
            Route("/token", authority.token, methods=["POST"]),
            Route("/admin/{what}", authority.admin, methods=["POST"]),
            Route("/mcp", Guarded(), methods=["GET", "POST", "DELETE"]),
        ],
        lifespan=lifespan,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True, help="the port to serve on (the issuer names it)")
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--jwks", help="the JWKS of the identity provider whose JWTs token exchange accepts")
    parser.add_argument("--jwt-issuer", default="", help="their `iss`")
    parser.add_argument("--jwt-audience", default="", help="their `aud` (the gateway they were issued for)")
    args = parser.parse_args()
    authority = Authority()
    authority.base = f"http://127.0.0.1:{args.port}"
    if args.jwks:
        authority.keys = jwt.PyJWKClient(args.jwks, cache_keys=True)
        authority.jwt_issuer, authority.jwt_audience = args.jwt_issuer, args.jwt_audience
    config = uvicorn.Config(build(authority), host="127.0.0.1", port=args.port, log_config=None, access_log=False)
    anyio.run(PortReportingServer(config, args.port_file).serve)


@contextlib.contextmanager
def serving(folder: Path, *options: str) -> Iterator[str]:
    """Run this server in a process of its own (`options`: more of its arguments, e.g. `--jwks URL`); yields its base
    URL (the issuer and the resource's origin)."""
    from tests.harness import free_port, port_file_server

    port, port_file = free_port(), folder / "guarded.port"
    argv = [sys.executable, "-m", "tests.servers.guarded", "--port", str(port), "--port-file", str(port_file)]
    argv += options
    with port_file_server(argv, port_file):
        yield f"http://127.0.0.1:{port}"


if __name__ == "__main__":
    main()
