"""The page (`/ui`) and `/metrics` on the HTTP front: servers, catalog, recent calls, Think workflows.

Behind the same auth as /mcp (the `Authenticate` middleware runs before these routes), Host/Origin
checked as /mcp is, a strict Content-Security-Policy, every asset served from this package (no CDN, no
inline script). A browser signs in at /ui/login with its token and gets a sign-in of its own, never the token
(`gateway.fronts.auth.signins`: a random id in an HttpOnly, SameSite=Strict cookie for /ui only), which Sign out
ends on every replica. Read-only but for two actions, for `auth.admin_groups` only: the reload, and forgetting a
request find_tools learned (`/ui/learned`); and each person's own choice to see their calls' arguments
(`/ui/arguments`), and Disconnect from a server that acts as each person (`page.connections`). As POSTs checked for
Origin, none can be forged by another site. Live tabs poll their own URL for the fresh `<main>` (header
`X-Page-Part: main`).
"""

import json
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from gateway.fronts.auth.admin import Admins
from gateway.fronts.auth.callers import IDENTITY_SCOPE
from gateway.fronts.auth.signins import PageSignIns
from gateway.fronts.page import figures as figured
from gateway.fronts.page import learned as learned_view
from gateway.fronts.page import listing, stored, think, views
from gateway.fronts.page.arguments import arguments_routes
from gateway.fronts.page.connections import connection_routes
from gateway.fronts.page.live import live_handler
from gateway.fronts.page.observed import Observed
from gateway.fronts.page.respond import HEADERS, HERE, Handler, page
from gateway.fronts.page.signin import signin_routes
from gateway.fronts.page.tryout import try_routes
from gateway.middleware.publish import Publisher
from gateway.session import ANONYMOUS, Identity
from gateway.store.base import StoreUnavailable

METRICS_HEADERS = {"Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'; sandbox"}
"""/metrics is data: nothing in it runs, loads or frames, whatever a name in it says (nosniff: `fronts.http`)."""
RELOAD = "POST /ui/reload"


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
                return page("missing.html", {"tab": name, "viewer": who, "why": str(exc)}, status=503)
            if context is None:
                return page("missing.html", {"tab": name, "viewer": who}, status=404)
            part = request.headers.get("x-page-part") == "main"
            return page(f"{name}.html", {**context, "tab": name, "viewer": who, "part": part})

        return endpoint

    async def servers(request: Request, who: views.Viewer) -> dict[str, Any]:
        last = gateway.reloader.last if gateway.reloader is not None else None
        health = views.health(gateway)
        for row in health["servers"]:  # where the viewer stands with each server that signs people in
            if row["name"] in gateway.oauth.servers:
                row["sign_in"] = await gateway.oauth.standing(row["name"], who.identity.owner)
        return {**health, "last_reload": None if last is None else last.as_dict()}

    async def catalog(request: Request, who: views.Viewer) -> dict[str, Any]:
        seen = await recent(who) if who.admin else []  # every identity that has used the gateway lately
        return await views.catalog(gateway, who, request.query_params.get("q", "").strip(), seen)

    async def recent(who: views.Viewer) -> list[dict[str, Any]]:
        """The calls the viewer may see, this replica's latest included (published first: read, not waited for)."""
        await publisher.flush()
        return views.visible(await publisher.log.recent(views.owners(who)), who)

    async def calls(request: Request, who: views.Viewer) -> dict[str, Any]:
        keeping, shown = await publisher.keeping.chosen(who.identity.owner), await recent(who)
        newest = shown[0]["ref"] if shown else ""  # where the live stream starts from (`live.live_handler`)
        return {**listing.page(views.calls(shown), request.query_params), "keeping": keeping, "newest": newest}

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
        return {"call": found, "output": output, "mine": found.get("owner") == who.identity.owner}

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
            return page("missing.html", {"tab": "output", "viewer": who, "why": answer}, status=404)
        answer.headers.update(HEADERS)
        return answer

    async def figures(request: Request, who: views.Viewer) -> dict[str, Any]:
        shown = figured.figures(await recent(who))
        return {**shown, "replicas": figured.replicas(await publisher.log.counts(), publisher.replica)}

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
                await learned_view.forget(gateway.exposure, form)
                return RedirectResponse("/ui/learned", status_code=303, headers=HEADERS)
            except StoreUnavailable as exc:
                why, status = f"Not forgotten: {exc}", 503
        return page("missing.html", {"tab": "learned", "viewer": who, "why": why}, status=status)

    async def reload(request: Request) -> Response:
        """The page's one action; answered with a page (a browser followed the form), the report in it."""
        refused = await security.validate_request(request, is_post=False)  # a form, not JSON: Origin is the check
        if refused is not None:
            return refused
        who = viewer(request)
        why = admins.refusal(request, RELOAD)
        if why is not None:
            return page("reload.html", {"tab": "servers", "viewer": who, "ok": False, "error": why}, status=403)
        if gateway.reloader is None:
            why = "This gateway was started without a config file (--config), so there is nothing to reload."
            return page("reload.html", {"tab": "servers", "viewer": who, "ok": False, "error": why}, status=409)
        report = await gateway.reloader.reload_json()
        context = {"tab": "servers", "viewer": who, "ok": report["ok"], "report": json.dumps(report, indent=2)}
        return page("reload.html", context, status=200 if report["ok"] else 422)

    return [
        metrics_route(publisher, security),
        *signin_routes(security, admins, signins, viewer),
        Route("/ui", tab("servers", servers)),
        Route("/ui/catalog", tab("catalog", catalog)),
        *connection_routes(gateway, security, viewer),
        Route("/ui/calls", tab("calls", calls)),
        Route("/ui/calls/live", live_handler(publisher, security, viewer, recent)),
        Route("/ui/calls.json", export("json")),
        Route("/ui/calls.csv", export("csv")),
        Route("/ui/calls/{ref}", tab("call", one_call)),
        Route("/ui/outputs/{output_id}", tab("output", output)),
        Route("/ui/outputs/{output_id}/download", download),
        *try_routes(gateway, security, viewer, recent),
        *arguments_routes(publisher.keeping, security, viewer),
        Route("/ui/think", tab("think", workflows)),
        Route("/ui/think/{workflow}/{run_id}", tab("run", one_run)),
        Route("/ui/metrics", tab("metrics", figures)),
        Route("/ui/reload", reload, methods=["POST"]),
        Route("/ui/learned", tab("learned", learned)),
        Route("/ui/learned/forget", forget_learned, methods=["POST"]),
        Mount("/ui/static", app=StaticFiles(directory=HERE / "static"), name="static"),
    ]
