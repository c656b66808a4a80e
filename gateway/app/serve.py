"""Run a gateway behind the stdio front or the HTTP front until it is told to stop."""

import contextlib
import ipaddress
import logging
import signal
import socket
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import anyio
import uvicorn
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.applications import Starlette
from starlette.types import ASGIApp

from gateway import telemetry
from gateway.app.gateway import Gateway
from gateway.app.listening import listening
from gateway.config import GatewayConfig
from gateway.fronts.auth.admin import Admins
from gateway.fronts.auth.asgi import Authenticate
from gateway.fronts.auth.bearer import Authenticator
from gateway.fronts.auth.configured import authenticator
from gateway.fronts.auth.local import Locality
from gateway.fronts.auth.signins import PageSignIns
from gateway.fronts.connect import routes as connect_routes
from gateway.fronts.http import Nosniff, build_app
from gateway.fronts.page import routes as page_routes
from gateway.fronts.stdio import serve_stdio
from gateway.middleware.audit import AuditStream
from gateway.pipeline import Middleware
from gateway.session import os_user

logger = logging.getLogger(__name__)


async def stdio(
    config: GatewayConfig,
    chain: list[Middleware] | None = None,
    *,
    path: Path | None = None,
    ui: tuple[str, int] | None = None,
) -> None:
    """`chain=None` is the default pipeline; benchmarks pass `[]` to measure the front without it. `path`: the
    config file, reloaded on SIGHUP or change. `ui`: (host, port) to serve the page and /metrics on meanwhile."""
    # Recorded for the page, or for the MCP duration histograms an OTLP exporter sends.
    gateway = Gateway(config, chain=chain, config_path=path, record=ui is not None or telemetry.metering)
    if ui is None:  # nothing serves a browser: a call that needs a sign-in points at `gateway login`
        gateway.oauth.base_url = None
    if isinstance(gateway.audit, AuditStream):  # `audit.path: "-"`: stdout carries MCP here, so stderr
        gateway.audit.stream = sys.stderr
    async with anyio.create_task_group() as tg:
        tg.start_soon(_stop_on_signal, tg.cancel_scope)
        async with gateway.running():
            if ui is not None:
                tg.start_soon(_serve_ui, gateway, *ui)
            await serve_stdio(gateway.front, max_message_bytes=config.limits.max_message_bytes)
        tg.cancel_scope.cancel()


class _Beside(uvicorn.Server):
    """A uvicorn server inside the stdio gateway's event loop: the gateway owns the signals and the exit (it
    cancels this task), so the loop wakes once a second for the Date header, not ten times to look for an exit."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def main_loop(self) -> None:
        while True:
            await self.on_tick(0)  # tick 0: refreshes the Date header
            await anyio.sleep(1)


async def _serve_ui(gateway: Gateway, host: str, port: int) -> None:
    """The page beside a stdio session (`serve --ui`): the same auth and checks as the HTTP front's page. An address
    it cannot listen on (another window's gateway has the port) leaves the session without its page, never without
    the session (`listening`)."""
    with contextlib.ExitStack() as stack:
        try:
            sockets = stack.enter_context(listening(host, port))
        except OSError as exc:
            gateway.oauth.base_url = None  # nothing serves /connect here: a call that needs a sign-in points at login
            logger.warning(
                "the page is not served: cannot listen on %s:%d (%s); this session goes on without it. Give --ui an "
                "address of this machine and a port no other program listens on (another gateway's page may be there).",
                host,
                port,
                exc.strerror or exc,
            )
            return
        await _page(gateway, host, sockets)


async def _page(gateway: Gateway, host: str, sockets: list[socket.socket]) -> None:
    config = gateway.config
    port = sockets[0].getsockname()[1]  # the one given, or the one the system chose for 0
    assert gateway.publisher is not None  # `stdio` records when asked for the page
    security = TransportSecuritySettings(
        allowed_hosts=config.listen.allowed_hosts, allowed_origins=config.listen.allowed_origins
    )
    locality = Locality.of(config.listen)
    admins = Admins(frozenset(config.auth.admin_groups), locality)
    auth = authenticator(config.auth, config.listen)
    signins = page_signins(gateway, auth)
    transport = TransportSecurityMiddleware(security)
    # The page is the stdio user's: their runs, outputs and calls (a token's holder, if auth is on, sees their own).
    routes = page_routes(gateway, gateway.publisher, transport, admins, signins=signins, local=os_user())
    routes += connect_routes(gateway.oauth)
    gateway.oauth.base_url = f"http://{host}:{port}"  # beside stdio, people sign in through this server
    app = Nosniff(Authenticate(Starlette(routes=routes), auth, locality=locality, signins=signins))
    logger.info("page at http://%s:%d/ui (metrics at /metrics)", host, port)
    # The peer is the socket's (`proxy_headers` off): who is local is `Locality`'s to judge, on every request.
    settings = uvicorn.Config(app, log_level="warning", lifespan="off", proxy_headers=False)
    await _Beside(settings).serve(sockets)


async def _stop_on_signal(scope: anyio.CancelScope) -> None:
    """SIGTERM and Ctrl-C (SIGINT) end the gateway as a closed stdin does: downstreams closed, then telemetry flushed
    by the caller. SIGTERM's default action would kill the process and drop the last batch of spans and metrics;
    SIGINT's is a KeyboardInterrupt raised wherever the main thread is, outside anyio's cancellation. A SIGINT this
    process was started ignoring (a background job of a script) stays ignored, as a shell expects."""
    stopping = [signal.SIGTERM] + ([signal.SIGINT] if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN else [])
    with anyio.open_signal_receiver(*stopping) as signals:
        async for received in signals:
            logger.info("%s: stopping", received.name)
            scope.cancel()
            return


def http_app(gateway: Gateway, auth: Authenticator) -> ASGIApp:
    """The HTTP front of `gateway` as an ASGI app (what `serve --http` runs under uvicorn)."""
    config = gateway.config
    signins = page_signins(gateway, auth)
    return build_app(
        gateway.front,
        listen=config.listen,
        max_body_bytes=config.limits.max_message_bytes,
        lifespan=gateway.running,
        health=gateway.health,
        authenticator=auth,
        auth=config.auth,
        reload=gateway.reloader.reload_json if gateway.reloader is not None else None,
        page=None if gateway.publisher is None else partial(page_routes, gateway, gateway.publisher, signins=signins),
        signins=signins,
        connect=connect_routes(gateway.oauth),
    )


def page_signins(gateway: Gateway, auth: Authenticator) -> PageSignIns:
    """The page's sign-ins, kept in the gateway's store (shared by replicas on Redis)."""
    return PageSignIns(gateway.stores.signins, auth, ttl_s=gateway.config.auth.page_session_s)


def http(config: GatewayConfig, host: str, port: int, *, path: Path | None = None) -> int:
    """`serve --http`: the exit code (1: the address cannot be listened on, said before any server is started; 3:
    uvicorn's, the gateway did not start)."""
    with contextlib.ExitStack() as stack:
        try:
            sockets = stack.enter_context(listening(host, port))
        except OSError as exc:
            print(  # noqa: T201 -- the CLI's answer
                f"gateway serve: cannot listen on {host}:{port} ({exc.strerror or exc}); give --http an address of "
                "this machine and a port no other program listens on (another gateway may be serving there).",
                file=sys.stderr,
            )
            return 1
        return 0 if _http(config, host, sockets, path) else 3


def _http(config: GatewayConfig, host: str, sockets: list[socket.socket], path: Path | None) -> bool:
    """Serves until told to stop; whether it started."""
    port = sockets[0].getsockname()[1]  # the one given, or the one the system chose for 0
    gateway = Gateway(config, config_path=path, record=True)
    if config.auth.resource_url is None:  # people sign in to OAuth servers through this address
        gateway.oauth.base_url = f"http://{host}:{port}"
    auth = authenticator(config.auth, config.listen)
    app = http_app(gateway, auth)
    kinds = [k for k, on in (("static tokens", bool(auth.static)), ("JWT", auth.verifier is not None)) if on]
    required = f"auth: {' and '.join(kinds)}" if kinds else "no auth"
    logger.info(
        "serving http://%s:%d/mcp (legacy SSE at /sse, health at /healthz, page at /ui; %s)", host, port, required
    )
    if not kinds and not _loopback(host):
        logger.warning(
            "listening on %s without auth: /mcp answers anyone who can reach it; the page, /metrics, /reload and "
            "/healthz's details answer callers on this machine only. Configure auth.tokens or auth.jwt.",
            host,
        )
    # The peer is the socket's (`proxy_headers` off): uvicorn would take X-Forwarded-For from a loopback peer as
    # the client, and who is local is `Locality`'s to judge (`listen.trusted_proxies`).
    settings = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=3, proxy_headers=False)
    server = uvicorn.Server(settings)
    server.run(sockets)
    return server.started


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve anywhere
        return False
