"""The page (`/ui`) and `/metrics` on the HTTP front: servers, catalog, recent calls, Think workflows.

Behind the same auth as /mcp (the `Authenticate` middleware runs before these routes), Host/Origin
checked as /mcp is, a strict Content-Security-Policy, every asset served from this package (no CDN, no
inline script). A browser signs in at /ui/login with its token and gets a sign-in of its own, never the token
(`gateway.fronts.auth.signins`: a random id in an HttpOnly, SameSite=Strict cookie for /ui only), which Sign out
ends on every replica. Read-only but for two actions, for `auth.admin_groups` only: the reload, and forgetting a
request find_tools learned (`/ui/learned`); as POSTs checked for Origin, neither can be forged by another site. Live
tabs poll their own URL for the fresh `<main>` (header `X-Page-Part: main`).
"""

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from jinja2 import Environment, FileSystemLoader, select_autoescape
from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from gateway.fronts.auth.admin import Admins
from gateway.fronts.auth.asgi import PAGE_COOKIE
from gateway.fronts.auth.callers import IDENTITY_SCOPE, Caller
from gateway.fronts.auth.refusal import Refused
from gateway.fronts.auth.signins import PageSignIns
from gateway.fronts.page import learned as learned_view
from gateway.fronts.page import listing, stored, think, trying, views
from gateway.fronts.page.observed import Observed
from gateway.middleware.policy import Subject
from gateway.middleware.publish import Publisher
from gateway.routing.catalog import Entry
from gateway.session import ANONYMOUS, Identity
from gateway.store.base import StoreUnavailable

HERE = Path(__file__).parent
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
METRICS_HEADERS = {"Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'; sandbox"}
"""/metrics is data: nothing in it runs, loads or frames, whatever a name in it says (nosniff: `fronts.http`)."""
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # not no-referrer: Chromium then sends `Origin: null` with a form POST
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}
RELOAD = "POST /ui/reload"
LIVE_STREAMS = 32
"""Live Calls views (server-sent events) served at once, all viewers together."""
LIVE_S = 300.0
"""How long one live view's stream lasts (the browser reconnects)."""
LIVE_POLL_S = 5.0
"""How often a live view looks at the call log without a call on this replica (other replicas' calls)."""
_templates = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True))

Handler = Callable[[Request], Awaitable[Response]]


def metrics_route(publisher: Publisher, security: TransportSecurityMiddleware) -> Route:
    """`GET /metrics`: the MCP operation histograms in Prometheus text format, behind the same auth as /mcp."""

    async def endpoint(request: Request) -> Response:
        refused = await security.validate_request(request, is_post=False)
        if refused is not None:
            return refused
        # This replica's own: Prometheus scrapes each replica and sums; the page shows every replica's (Redis).
        text = publisher.recorder.operations.prometheus()
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4", headers=METRICS_HEADERS)

    return Route("/metrics", endpoint)


def routes(
    gateway: Observed,
    publisher: Publisher,
    security: TransportSecurityMiddleware,
    admins: Admins,
    *,
    signins: PageSignIns,
    local: Identity | None = None,
) -> list[BaseRoute]:
    """`local`: whose page it is when no one signed in (`serve --ui`: the stdio session's OS user, whose runs, outputs
    and calls the page then shows; without auth only callers on this machine reach it)."""

    def viewer(request: Request) -> views.Viewer:
        identity = request.scope.get(IDENTITY_SCOPE, ANONYMOUS)
        if local is not None and identity.kind == "anonymous":
            identity = local
        return views.Viewer(identity, admins.why_not(request, RELOAD) is None)

    def tab(name: str, data: Callable[[Request, views.Viewer], Awaitable[dict[str, Any] | None]]) -> Handler:
        async def endpoint(request: Request) -> Response:
            refused = await security.validate_request(request, is_post=False)
            if refused is not None:
                return refused
            who = viewer(request)
            try:
                context = await data(request, who)
            except StoreUnavailable as exc:  # the call log or a run on a Redis that is down: said, not a crash
                return _page("missing.html", {"tab": name, "viewer": who, "why": str(exc)}, status=503)
            if context is None:
                return _page("missing.html", {"tab": name, "viewer": who}, status=404)
            part = request.headers.get("x-page-part") == "main"
            return _page(f"{name}.html", {**context, "tab": name, "viewer": who, "part": part})

        return endpoint

    async def servers(request: Request, who: views.Viewer) -> dict[str, Any]:
        last = gateway.reloader.last if gateway.reloader is not None else None
        return {**views.health(gateway), "last_reload": None if last is None else last.as_dict()}

    async def catalog(request: Request, who: views.Viewer) -> dict[str, Any]:
        seen = await recent(who) if who.admin else []  # every identity that has used the gateway lately
        return await views.catalog(gateway, who, request.query_params.get("q", "").strip(), seen)

    async def recent(who: views.Viewer) -> list[dict[str, Any]]:
        """The calls the viewer may see, this replica's latest included (published first: read, not waited for)."""
        await publisher.flush()
        return await publisher.log.recent(views.owners(who))

    async def calls(request: Request, who: views.Viewer) -> dict[str, Any]:
        return listing.page(views.calls(await recent(who)), request.query_params)

    streams = 0

    async def live(request: Request) -> Response:
        """Server-sent events for the Calls tab: `calls` (with the newest call's reference) whenever a call the
        viewer may see arrives; the page then fetches its list as filtered. Bounded: `LIVE_STREAMS` at once, each
        ending after `LIVE_S` (a browser's EventSource reconnects by itself)."""
        refused = await security.validate_request(request, is_post=False)
        if refused is not None:
            return refused
        if streams >= LIVE_STREAMS:
            why = f"{streams} live views are open, the most this gateway serves at once; the page polls instead."
            return PlainTextResponse(why, status_code=503, headers=HEADERS)
        who = viewer(request)

        async def events() -> AsyncIterator[str]:
            nonlocal streams
            streams += 1
            try:
                newest = None
                with anyio.move_on_after(LIVE_S):
                    while True:
                        arrived = publisher.recorder.arrival()  # before the read: a call meanwhile still wakes us
                        shown = await recent(who)
                        top = shown[0]["ref"] if shown else ""
                        if newest is not None and top != newest:
                            yield f"event: calls\ndata: {top}\n\n"
                        newest = top
                        with anyio.move_on_after(LIVE_POLL_S):  # another replica's calls wake no one here
                            await arrived.wait()
                        yield ": still here\n\n"
            except StoreUnavailable:
                return  # the browser reconnects; the poller says what is wrong
            finally:
                streams -= 1

        return StreamingResponse(events(), media_type="text/event-stream", headers=HEADERS)

    def export(kind: str) -> Handler:
        """The Calls tab's list as filtered (every page of it), as JSON or CSV, for download."""

        async def endpoint(request: Request) -> Response:
            return await exporting(request, kind)

        return endpoint

    async def exporting(request: Request, kind: str) -> Response:
        refused = await security.validate_request(request, is_post=False)
        if refused is not None:
            return refused
        try:
            found = listing.matching(views.calls(await recent(viewer(request))), listing.chosen(request.query_params))
        except StoreUnavailable as exc:
            return PlainTextResponse(f"Not exported: {exc}", status_code=503, headers=HEADERS)
        media = "application/json" if kind == "json" else "text/csv; charset=utf-8"
        disposition = {"Content-Disposition": f'attachment; filename="calls.{kind}"'}
        return Response(listing.exported(found, kind), media_type=media, headers={**HEADERS, **disposition})

    async def one_call(request: Request, who: views.Viewer) -> dict[str, Any] | None:
        found = views.call(await recent(who), request.path_params["ref"])
        if found is None:
            return None
        spilled, owner = found["spilled"], found.get("owner")
        if spilled is None:
            output = None
        elif owner is not None and owner != who.identity.owner:  # an admin looking at another's call
            output = stored.others(spilled, found["identity"])
        else:
            output = await stored.preview(gateway.outputs, who.identity.owner, spilled)
        return {"call": found, "output": output}

    async def output(request: Request, who: views.Viewer) -> dict[str, Any] | None:
        shown = await stored.preview(gateway.outputs, who.identity.owner, request.path_params["output_id"])
        return None if shown["error"] else {"output": shown}

    async def download(request: Request) -> Response:
        refused = await security.validate_request(request, is_post=False)
        if refused is not None:
            return refused
        who = viewer(request)
        answer = await stored.download(gateway.outputs, who.identity.owner, request.path_params["output_id"])
        if isinstance(answer, str):
            return _page("missing.html", {"tab": "output", "viewer": who, "why": answer}, status=404)
        answer.headers.update(HEADERS)
        return answer

    async def figures(request: Request, who: views.Viewer) -> dict[str, Any]:
        shown = views.figures(await recent(who))
        return {**shown, "replicas": views.replicas(await publisher.log.counts(), publisher.replica)}

    async def workflows(request: Request, who: views.Viewer) -> dict[str, Any]:
        return await think.tab(gateway.engine, who.identity.owner)

    async def one_run(request: Request, who: views.Viewer) -> dict[str, Any] | None:
        found = request.path_params
        return await think.run(gateway.engine, who.identity.owner, found["workflow"], found["run_id"])

    async def learned(request: Request, who: views.Viewer) -> dict[str, Any]:
        return await learned_view.tab(gateway.exposure)

    async def forget_learned(request: Request) -> Response:
        refused = await security.validate_request(request, is_post=False)  # a form: Origin is the CSRF check
        if refused is not None:
            return refused
        who = viewer(request)
        why, status = admins.refusal(request, learned_view.FORGET), 403
        if why is None:
            form = await request.form()
            try:
                await learned_view.forget(gateway.exposure, str(form.get("tool", "")), str(form.get("request", "")))
                return RedirectResponse("/ui/learned", status_code=303, headers=HEADERS)
            except StoreUnavailable as exc:
                why, status = f"Not forgotten: {exc}", 503
        return _page("missing.html", {"tab": "learned", "viewer": who, "why": why}, status=status)

    async def reload(request: Request) -> Response:
        """The page's one action; answered with a page (a browser followed the form), the report in it."""
        refused = await security.validate_request(request, is_post=False)  # a form, not JSON: Origin is the check
        if refused is not None:
            return refused
        who = viewer(request)
        why = admins.refusal(request, RELOAD)
        if why is not None:
            return _page("reload.html", {"tab": "servers", "viewer": who, "ok": False, "error": why}, status=403)
        if gateway.reloader is None:
            why = "This gateway was started without a config file (--config), so there is nothing to reload."
            return _page("reload.html", {"tab": "servers", "viewer": who, "ok": False, "error": why}, status=409)
        report = await gateway.reloader.reload_json()
        context = {"tab": "servers", "viewer": who, "ok": report["ok"], "report": json.dumps(report, indent=2)}
        return _page("reload.html", context, status=200 if report["ok"] else 422)

    async def tool(request: Request) -> tuple[views.Viewer, Entry | None]:
        entry = (await gateway.registry.catalog()).tools.get(request.path_params["tool"])
        return viewer(request), entry if entry is not None and isinstance(entry.item, types.Tool) else None

    def try_page(who: views.Viewer, entry: Entry, error: str | None = None, status: int = 200) -> Response:
        denied = gateway.policy.denial(who.identity, Subject.of(entry))
        context = {"tab": "try", "viewer": who, "tool": views.tried(entry), "denied": denied, "error": error}
        return _page("try.html", context, status=status)

    async def try_form(request: Request) -> Response:
        refused = await security.validate_request(request, is_post=False)
        if refused is not None:
            return refused
        who, entry = await tool(request)
        if entry is None:
            return _page("missing.html", {"tab": "try", "viewer": who, "why": "No tool by that name."}, status=404)
        return try_page(who, entry)

    async def try_call(request: Request) -> Response:
        """A tool called as the viewer through the whole pipeline; answered with the recorded call's detail."""
        refused = await security.validate_request(request, is_post=False)  # a form: Origin is the CSRF check
        if refused is not None:
            return refused
        who, entry = await tool(request)
        if entry is None:
            return _page("missing.html", {"tab": "try", "viewer": who, "why": "No tool by that name."}, status=404)
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

    async def login_form(request: Request) -> Response:
        refused = await security.validate_request(request, is_post=False)
        return refused or _page("login.html", {"tab": "login", "viewer": viewer(request), "error": None})

    async def login(request: Request) -> Response:
        """The token checked as /mcp checks it, then a sign-in of the page's own in a cookie only /ui pages get."""
        refused = await security.validate_request(request, is_post=False)  # a form: Origin is the CSRF check
        if refused is not None:
            return refused
        if not signins.authenticator.required:
            return RedirectResponse("/ui", status_code=303, headers=HEADERS)  # no auth: nothing to sign in to
        token = str((await request.form()).get("token", "")).strip()
        try:
            identity = await signins.authenticator.identify(f"Bearer {token}")
            cookie, lasts_s = await signins.open(identity, token)
            replaced = request.cookies.get(PAGE_COOKIE)
            if replaced:  # signed in again (perhaps as another): the browser's earlier sign-in ends, copies too
                await signins.close(replaced)
        except (Refused, StoreUnavailable) as exc:
            why = exc.description if isinstance(exc, Refused) else f"Signing in needs the store: {exc}"
            context = {"tab": "login", "viewer": viewer(request), "error": why}
            return _page("login.html", context, status=401 if isinstance(exc, Refused) else 503)
        answer = RedirectResponse("/ui", status_code=303, headers=HEADERS)
        secure = admins.locality.https(request.scope)  # behind a TLS proxy: as the proxy says, if trusted
        answer.set_cookie(
            PAGE_COOKIE, cookie, max_age=lasts_s, path="/ui", httponly=True, samesite="strict", secure=secure
        )
        return answer

    async def logout(request: Request) -> Response:
        """Ends the sign-in in the store (a copy of the cookie is worth nothing after), then the cookie."""
        refused = await security.validate_request(request, is_post=False)
        if refused is not None:
            return refused
        cookie = request.cookies.get(PAGE_COOKIE)
        if cookie:
            try:
                await signins.close(cookie)
            except StoreUnavailable as exc:  # not signed out: said, and the cookie kept for another try
                why = f"Not signed out: {exc}. Try again."
                return _page("login.html", {"tab": "login", "viewer": viewer(request), "error": why}, status=503)
        answer = RedirectResponse("/ui/login", status_code=303, headers=HEADERS)
        answer.delete_cookie(PAGE_COOKIE, path="/ui", httponly=True, samesite="strict")
        return answer

    return [
        metrics_route(publisher, security),
        Route("/ui/login", login_form),
        Route("/ui/login", login, methods=["POST"]),
        Route("/ui/logout", logout, methods=["POST"]),
        Route("/ui", tab("servers", servers)),
        Route("/ui/catalog", tab("catalog", catalog)),
        Route("/ui/calls", tab("calls", calls)),
        Route("/ui/calls/live", live),
        Route("/ui/calls.json", export("json")),
        Route("/ui/calls.csv", export("csv")),
        Route("/ui/calls/{ref}", tab("call", one_call)),
        Route("/ui/outputs/{output_id}", tab("output", output)),
        Route("/ui/outputs/{output_id}/download", download),
        Route("/ui/try/{tool:path}", try_form),
        Route("/ui/try/{tool:path}", try_call, methods=["POST"]),
        Route("/ui/think", tab("think", workflows)),
        Route("/ui/think/{workflow}/{run_id}", tab("run", one_run)),
        Route("/ui/metrics", tab("metrics", figures)),
        Route("/ui/reload", reload, methods=["POST"]),
        Route("/ui/learned", tab("learned", learned)),
        Route("/ui/learned/forget", forget_learned, methods=["POST"]),
        Mount("/ui/static", app=StaticFiles(directory=HERE / "static"), name="static"),
    ]


def _page(template: str, context: dict[str, Any], status: int = 200) -> HTMLResponse:
    return HTMLResponse(_templates.get_template(template).render(context), status_code=status, headers=HEADERS)
