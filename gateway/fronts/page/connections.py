"""The servers tab's sign-in actions for servers that act as each person (`auth: {type: oauth}`): Connect signs the
viewer in, Disconnect signs them out. Each acts for the viewer alone, on their own grant; Disconnect is a POST checked
for Origin like the page's other actions, so another site cannot sign a person out."""

from collections.abc import Callable

from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from gateway.downstreams.pool import Pool
from gateway.errors import GatewayError
from gateway.fronts.page import views
from gateway.fronts.page.observed import Observed
from gateway.fronts.page.respond import HEADERS, page
from gateway.store.base import StoreUnavailable


def connection_routes(
    gateway: Observed, security: TransportSecurityMiddleware, viewer: Callable[[Request], views.Viewer]
) -> list[Route]:
    """`GET /ui/connect/<server>`, `POST /ui/disconnect/<server>`."""

    async def connect(request: Request) -> Response:
        """The viewer's sign-in to that server, through a one-time link made for them here (the page's cookie is the
        page's alone: `/connect` reads no cookie, only a ticket or a bearer token)."""
        refused = await security.validate_request(request, is_post=False)
        if refused is not None:
            return refused
        server = request.path_params["server"]
        link = await gateway.oauth.link(server, viewer(request).identity) if server in gateway.oauth.servers else None
        if link is None:
            return page("missing.html", {"tab": "servers", "viewer": viewer(request), "why": "No such sign-in."}, 404)
        return RedirectResponse(link, 303, headers=HEADERS)

    async def disconnect(request: Request) -> Response:
        """Sign the viewer out of that server: their tokens are forgotten in the store (every replica's next call of
        theirs asks them to sign in) and their connection here stops now."""
        refused = await security.validate_request(request, is_post=False)  # a form: Origin is the CSRF check
        if refused is not None:
            return refused
        who, server = viewer(request), request.path_params["server"]
        if server not in gateway.oauth.servers:
            why = f"{server!r} signs nobody in (no server with auth: {{type: oauth}} by that name)."
            return page("missing.html", {"tab": "servers", "viewer": who, "why": why}, 404)
        try:
            await gateway.oauth.sign_out(server, who.identity)
        except GatewayError as exc:  # the store is down, or no key opens it: still signed in, and said why
            why = f"Not disconnected from {server}: {exc}"
            status = 503 if isinstance(exc, StoreUnavailable) else 500
            return page("missing.html", {"tab": "servers", "viewer": who, "why": why}, status)
        pool = gateway.registry.downstreams.get(server)
        if isinstance(pool, Pool):
            pool.stop(who.identity)
        return RedirectResponse("/ui", 303, headers=HEADERS)

    return [
        Route("/ui/connect/{server}", connect),
        Route("/ui/disconnect/{server}", disconnect, methods=["POST"]),
    ]
