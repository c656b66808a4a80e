"""A call's time limit that the server's progress extends: a server that says it is working gets `timeout_s`
more from each progress notification, up to `max_timeout_s` in all (a silent one still fails at `timeout_s`).

The gateway asks every downstream call for progress (it sends a progress token even when the client did not),
so the limit can follow the work; the client still hears progress only when it asked for it."""

import anyio

from gateway.types import ProgressFn


class Deadline:
    """The cancel scope of one call (`scope`, enter it around the request) and the progress callback that moves
    its deadline (`progress`, handed to the SDK or the lane) and relays to the client's `relay`, if any."""

    def __init__(self, timeout_s: float, max_timeout_s: float | None, relay: ProgressFn | None) -> None:
        self.timeout_s = timeout_s
        self.most_s = max(timeout_s, max_timeout_s if max_timeout_s is not None else 10 * timeout_s)
        """The longest the call may take with progress (no server may hold a call forever by reporting)."""
        self._started = anyio.current_time()
        self._relay = relay
        self.scope = anyio.CancelScope(deadline=self._started + timeout_s)
        self.extended = False

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.scope.deadline = min(anyio.current_time() + self.timeout_s, self._started + self.most_s)
        self.extended = True
        if self._relay is not None:
            await self._relay(progress, total, message)

    @property
    def limit(self) -> tuple[float, str]:
        """The limit that ended a timed-out call: seconds, and the setting that holds it."""
        return (self.most_s, "max_timeout_s") if self.extended else (self.timeout_s, "timeout_s")
