"""The page's "try a tool" routes: a tool's form, and the tool called as the viewer through the whole pipeline."""

from collections.abc import Awaitable, Callable
from typing import Any

import mcp.types as types
from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from gateway.fronts.auth.callers import Caller
from gateway.fronts.page import trying, views
from gateway.fronts.page.observed import Observed
from gateway.fronts.page.respond import HEADERS, page
from gateway.middleware.policy import Subject
from gateway.routing.catalog import Entry


def try_routes(
    gateway: Observed,
    security: TransportSecurityMiddleware,
    viewer: Callable[[Request], views.Viewer],
    recent: Callable[[views.Viewer], Awaitable[list[dict[str, Any]]]],
) -> list[Route]:
    """`GET` and `POST /ui/try/{tool}`; `recent`: the calls a viewer may see, this replica's latest included."""

    async def tool(request: Request) -> tuple[views.Viewer, Entry | None]:
        entry = (await gateway.registry.catalog()).tools.get(request.path_params["tool"])
        return viewer(request), entry if entry is not None and isinstance(entry.item, types.Tool) else None

    def try_page(who: views.Viewer, entry: Entry, error: str | None = None, status: int = 200) -> Response:
        denied = gateway.policy.denial(who.identity, Subject.of(entry))
        context = {"tab": "try", "viewer": who, "tool": views.tried(entry), "denied": denied, "error": error}
        return page("try.html", context, status=status)

    async def try_form(request: Request) -> Response:
        refused = await security.validate_request(request, is_post=False)
        if refused is not None:
            return refused
        who, entry = await tool(request)
        if entry is None:
            return page("missing.html", {"tab": "try", "viewer": who, "why": "No tool by that name."}, status=404)
        return try_page(who, entry)

    async def try_call(request: Request) -> Response:
        """A tool called as the viewer through the whole pipeline; answered with the recorded call's detail."""
        refused = await security.validate_request(request, is_post=False)  # a form: Origin is the CSRF check
        if refused is not None:
            return refused
        who, entry = await tool(request)
        if entry is None:
            return page("missing.html", {"tab": "try", "viewer": who, "why": "No tool by that name."}, status=404)
        assert isinstance(entry.item, types.Tool)
        form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
        if trying.changes_state(entry.item) and form.get("confirm") != "yes":
            why = "This tool may change things: tick the confirmation to call it."
            return try_page(who, entry, why, status=400)
        try:
            arguments = trying.arguments(entry.item, form)
        except trying.BadForm as exc:
            return try_page(who, entry, str(exc), status=400)
        identity = who.identity
        caller = Caller(f"{identity.key}|page", identity)
        gateway.front.sessions.get(caller.key, identity).client = trying.CLIENT
        params = {"name": entry.exposed, "arguments": arguments}
        # No connection: the page's request asks no client anything (the door gives it a client end of none).
        call = gateway.front.door.open(caller, "tools/call", params, version=None, meta=None, connection=None)
        await gateway.front.call_tool(call)
        mine = [c for c in await recent(who) if c.get("owner") == identity.owner and c.get("client") == trying.CLIENT]
        made = next((c for c in mine if c["tool"] == entry.exposed), None)
        return RedirectResponse("/ui/calls" if made is None else f"/ui/calls/{made['ref']}", 303, headers=HEADERS)

    return [
        Route("/ui/try/{tool:path}", try_form),
        Route("/ui/try/{tool:path}", try_call, methods=["POST"]),
    ]
