"""The front's subscription bus, with events meant for one identity's listen streams only.

A per-user server runs one process per identity (`downstreams.pool`): an update of a resource in ann's
process concerns ann's 2026-era `subscriptions/listen` streams, not bob's, though both listed the same
exposed URI. The SDK's `ListenHandler` filters by URI alone and subscribes from the stream's own task;
so the stream's identity is read there from `LISTENER` (set by the listen handler around it), and an
event published with an audience reaches only the streams of that identity.
"""

from collections.abc import Callable
from contextvars import ContextVar

from mcp.server.subscriptions import InMemorySubscriptionBus, ServerEvent

LISTENER: ContextVar[str | None] = ContextVar("gateway_listener", default=None)
"""The identity key of the listen stream being opened in this task (None: not known, hears only shared events)."""
_AUDIENCE: ContextVar[str | None] = ContextVar("gateway_audience", default=None)


class AudienceBus(InMemorySubscriptionBus):
    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        identity = LISTENER.get()

        def deliver(event: ServerEvent) -> None:
            audience = _AUDIENCE.get()  # listeners are called in the publisher's task
            if audience is None or audience == identity:
                listener(event)

        return super().subscribe(deliver)

    async def publish_to(self, event: ServerEvent, audience: str | None) -> None:
        """Publish `event` to every listen stream (`audience` None), or to those of one identity."""
        token = _AUDIENCE.set(audience)
        try:
            await self.publish(event)
        finally:
            _AUDIENCE.reset(token)
