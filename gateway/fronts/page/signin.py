"""The page's sign-in routes: /ui/login takes a token and gives the browser a sign-in of its own in a cookie for /ui
only (`gateway.fronts.auth.signins`), /ui/logout ends it on every replica."""

from collections.abc import Callable

from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from gateway.fronts.auth.admin import Admins
from gateway.fronts.auth.asgi import PAGE_COOKIE
from gateway.fronts.auth.refusal import Refused
from gateway.fronts.auth.signins import PageSignIns
from gateway.fronts.page import views
from gateway.fronts.page.respond import HEADERS, page
from gateway.store.base import StoreUnavailable


def signin_routes(
    security: TransportSecurityMiddleware,
    admins: Admins,
    signins: PageSignIns,
    viewer: Callable[[Request], views.Viewer],
) -> list[Route]:
    """`GET` and `POST /ui/login`, `POST /ui/logout`."""

    async def login_form(request: Request) -> Response:
        refused = await security.validate_request(request, is_post=False)
        return refused or page("login.html", {"tab": "login", "viewer": viewer(request), "error": None})

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
            return page("login.html", context, status=401 if isinstance(exc, Refused) else 503)
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
                return page("login.html", {"tab": "login", "viewer": viewer(request), "error": why}, status=503)
        answer = RedirectResponse("/ui/login", status_code=303, headers=HEADERS)
        answer.delete_cookie(PAGE_COOKIE, path="/ui", httponly=True, samesite="strict")
        return answer

    return [
        Route("/ui/login", login_form),
        Route("/ui/login", login, methods=["POST"]),
        Route("/ui/logout", logout, methods=["POST"]),
    ]
