"""The Calls tab's live view: server-sent events whenever a call the viewer may see arrives, bounded in number and
length."""

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse

from gateway.fronts.page import views
from gateway.fronts.page.respond import HEADERS, Handler
from gateway.middleware.publish import Publisher
from gateway.store.base import StoreUnavailable

LIVE_STREAMS = 32
"""Live Calls views (server-sent events) served at once, all viewers together."""
LIVE_S = 300.0
"""How long one live view's stream lasts (the browser reconnects)."""
LIVE_POLL_S = 5.0
"""How often a live view looks at the call log without a call on this replica (other replicas' calls)."""


def live_handler(
    publisher: Publisher,
    security: TransportSecurityMiddleware,
    viewer: Callable[[Request], views.Viewer],
    recent: Callable[[views.Viewer], Awaitable[list[dict[str, Any]]]],
) -> Handler:
    """`GET /ui/calls/live`; `recent`: the calls a viewer may see, this replica's latest included."""
    streams = 0

    async def live(request: Request) -> Response:
        """Server-sent events for the Calls tab: `calls` (with the newest call's reference) whenever a call the
        viewer may see arrives; the page then fetches its list as filtered. `after`: the newest call the page showed
        when drawn (`""`: none), so a call made before the stream began, or while it reconnected, is told at once.
        Bounded: `LIVE_STREAMS` at once, each ending after `LIVE_S` (a browser's EventSource reconnects by
        itself)."""
        refused = await security.validate_request(request, is_post=False)
        if refused is not None:
            return refused
        if streams >= LIVE_STREAMS:
            why = f"{streams} live views are open, the most this gateway serves at once; the page polls instead."
            return PlainTextResponse(why, status_code=503, headers=HEADERS)
        who = viewer(request)
        after = request.query_params.get("after")

        async def events() -> AsyncIterator[str]:
            nonlocal streams
            streams += 1
            try:
                newest = after
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

    return live
