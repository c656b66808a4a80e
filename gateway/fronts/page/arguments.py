"""The page's "show my own arguments" switch: a person chooses whether their own calls are kept with their
arguments from now on (`gateway.middleware.arguments`); nobody chooses for another, and nobody sees another's."""

from collections.abc import Callable

from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from gateway.fronts.page import views
from gateway.fronts.page.respond import HEADERS, page
from gateway.middleware.arguments import Keeping
from gateway.store.base import StoreUnavailable

CHOICES = {"on": True, "off": False}


def arguments_routes(
    keeping: Keeping, security: TransportSecurityMiddleware, viewer: Callable[[Request], views.Viewer]
) -> list[Route]:
    """`POST /ui/arguments` with `keep=on|off`, for the viewer's own calls; back to the Calls tab."""

    async def choose(request: Request) -> Response:
        refused = await security.validate_request(request, is_post=False)  # a form: Origin is the CSRF check
        if refused is not None:
            return refused
        who = viewer(request)
        keep = str((await request.form()).get("keep", ""))
        if keep not in CHOICES:
            why = f"keep={keep[:40]!r} is not a choice: send keep=on to keep your calls' arguments, keep=off to stop."
            return page("missing.html", {"tab": "calls", "viewer": who, "why": why}, status=400)
        try:
            await keeping.choose(who.identity.owner, CHOICES[keep])
        except StoreUnavailable as exc:
            why = f"Not changed: {exc}. Try again."
            return page("missing.html", {"tab": "calls", "viewer": who, "why": why}, status=503)
        return RedirectResponse("/ui/calls", status_code=303, headers=HEADERS)

    return [Route("/ui/arguments", choose, methods=["POST"])]
