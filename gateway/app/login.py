"""`gateway login SERVER` / `gateway logout SERVER`: a stdio user's sign-in to an OAuth-protected server.

Login runs the same sign-in as `/connect/<server>` (`downstreams.oauth_signin`), for the user on this machine (the
identity a stdio session has), with its callback on a loopback port of its own (RFC 8252): it prints the link (and opens
the browser unless told not to), waits for the authorization server's redirect back, and keeps the tokens sealed in the
configured store, where the stdio gateway's calls find them. Logout forgets them.
"""

import contextlib
import sys
import webbrowser
from collections.abc import Callable

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from gateway.app.listening import listening
from gateway.config import GatewayConfig
from gateway.downstreams.oauth import OAuth
from gateway.downstreams.oauth_signin import SIGN_IN_S
from gateway.errors import GatewayError
from gateway.session import os_user
from gateway.store.backends import open_stores


def _print(line: str) -> None:
    print(line, flush=True)  # noqa: T201 -- the CLI's output


async def login(config: GatewayConfig, server: str, *, browse: bool, say: Callable[[str], None] = _print) -> int:
    """Sign the user on this machine in to `server`; 0 when signed in. `say` gets each line for the person (the link
    first): the terminal's by default, a caller's own when the sign-in runs inside another program."""
    stores = open_stores(config)
    identity, outcome = os_user(), anyio.Event()
    said: list[str] = []
    try:
        async with contextlib.AsyncExitStack() as stack:
            sockets = stack.enter_context(listening("127.0.0.1", 0))  # the callback's: in the link before it serves
            base = f"http://127.0.0.1:{sockets[0].getsockname()[1]}"
            oauth = await stack.enter_async_context(OAuth(lambda: config.servers, stores.tokens, base, stores.signins))
            url, secret = await oauth.begin(server, identity)
            if url is None:
                say(f"Signed in to {server} as {identity.name} already.")
                return 0

            async def callback(request: Request) -> PlainTextResponse:
                q = request.query_params
                try:
                    done, who = await oauth.finish(q.get("state", ""), q.get("code", ""), q.get("iss"), secret)
                    said.append(f"Signed in to {done} as {who.name}.")
                    return PlainTextResponse(f"{said[0]} You can close this tab.")
                except GatewayError as exc:
                    said.append(f"Not signed in: {exc}")
                    return PlainTextResponse(said[0], 403)
                finally:
                    outcome.set()

            app = Starlette(routes=[Route("/oauth/callback", callback)])
            web = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
            async with anyio.create_task_group() as tg:
                tg.start_soon(web.serve, sockets)
                say(f"Sign in to {server}: {url}")
                if browse:
                    webbrowser.open(url)
                with anyio.move_on_after(SIGN_IN_S):
                    await outcome.wait()
                web.should_exit = True
    except GatewayError as exc:
        print(f"gateway login: {exc}", file=sys.stderr)  # noqa: T201
        return 1
    finally:
        await stores.aclose()
    say(said[0] if said else f"No sign-in within {SIGN_IN_S:g} s; run gateway login {server} again.")
    return 0 if said and said[0].startswith("Signed in") else 1


async def logout(config: GatewayConfig, server: str) -> int:
    stores = open_stores(config)
    try:
        async with OAuth(lambda: config.servers, stores.tokens, "http://127.0.0.1") as oauth:
            await oauth.sign_out(server, os_user())
    except GatewayError as exc:
        print(f"gateway logout: {exc}", file=sys.stderr)  # noqa: T201
        return 1
    finally:
        await stores.aclose()
    print(f"Signed out of {server}: its tokens are forgotten here.")  # noqa: T201
    return 0
