"""A person's sign-in to an OAuth-protected downstream server (`gateway.downstreams.oauth_signin`), in their browser.

`GET /connect/<server>?ticket=…` (the link a call that needs sign-in answers with) starts it for the identity the
ticket stands for, or without one for the authenticated caller, and sends the browser to the server's authorization
server with a cookie binding the sign-in to that browser; `GET /oauth/callback` brings the code back and finishes it
for that browser only (the state is bound to it and used once). Tokens never appear in a page: the answer says only
who signed in to what.
"""

import html
import logging

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from gateway.downstreams.oauth import OAuth
from gateway.downstreams.oauth_signin import SIGN_IN_S
from gateway.errors import GatewayError
from gateway.fronts.auth.callers import IDENTITY_SCOPE
from gateway.session import Identity

logger = logging.getLogger(__name__)
BROWSER_COOKIE = "gateway_oauth"
"""Binds a begun sign-in to the browser that began it."""


def routes(oauth: OAuth) -> list[BaseRoute]:
    async def connect(request: Request) -> Response:
        server = request.path_params["server"]
        ticket = request.query_params.get("ticket")
        identity = _caller(request) if ticket is None else await oauth.redeem(server, ticket)
        if identity is None:
            why = "was used already or has ended" if ticket else "carries no ticket and you sent no credentials"
            return _page("Sign-in not started", f"This link {why}: call the tool again for a fresh one.", 403)
        try:
            url, browser = await oauth.begin(server, identity)
        except GatewayError as exc:
            return _page(f"Could not start signing in to {server}", str(exc), 400)
        if url is None:
            return _page(f"Signed in to {server}", "Your sign-in still works: go back to your client and call again.")
        answer = RedirectResponse(url, 302, headers={"cache-control": "no-store"})
        # Lax, not Strict: the authorization server's redirect back is a cross-site top-level navigation.
        answer.set_cookie(
            BROWSER_COOKIE, browser, max_age=int(SIGN_IN_S), path="/oauth/", httponly=True, samesite="lax"
        )
        return answer

    async def callback(request: Request) -> Response:
        query = request.query_params
        if "error" in query:  # the person declined, or the authorization server refused
            why = f"{query['error']}: {query.get('error_description', '')}".rstrip(": ")
            return _page("Sign-in not completed", f"The authorization server answered {why}.", 400)
        if not query.get("state") or not query.get("code"):
            return _page("Sign-in not completed", "This address needs the code and state the sign-in sends.", 400)
        try:
            server, identity = await oauth.finish(
                query["state"], query["code"], query.get("iss"), request.cookies.get(BROWSER_COOKIE)
            )
        except GatewayError as exc:
            logger.info("sign-in callback refused: %s", exc)
            return _page("Sign-in not completed", str(exc), 403)
        answer = _page(
            f"Signed in to {server}", f"Signed in as {identity.name}: go back to your client and call again."
        )
        answer.delete_cookie(BROWSER_COOKIE, path="/oauth/")
        return answer

    return [Route("/connect/{server}", connect), Route("/oauth/callback", callback)]


def _caller(request: Request) -> Identity | None:
    """Who asks without a ticket: an authenticated caller, or without auth the person on this machine."""
    identity = request.scope.get(IDENTITY_SCOPE)  # none: refused credentials, let through for a ticket's sake
    return identity if isinstance(identity, Identity) else None


def _page(title: str, text: str, status: int = 200) -> HTMLResponse:
    body = f"<!doctype html><title>{html.escape(title)}</title><h1>{html.escape(title)}</h1><p>{html.escape(text)}</p>"
    return HTMLResponse(body, status, headers={"cache-control": "no-store"})
