"""A call's time limit that the server's progress extends: a server that says it is working gets `timeout_s`
more from each progress notification, up to `max_timeout_s` in all (a silent one still fails at `timeout_s`).

The gateway asks every downstream call for progress (it sends a progress token even when the client did not),
so the limit can follow the work; the client still hears progress only when it asked for it, and at most
`PROGRESS_PER_S` a second."""

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager

import anyio

from gateway.downstreams.throttle import Throttle
from gateway.sdk import ProgressFn

PROGRESS_PER_S = 20
"""Progress notifications relayed to the client per call and second, at most (the rest are counted and said)."""


class Deadline:
    """When one call is due (`at`, in the event loop's time) and the progress callback that moves it later
    (`progress`, handed to the SDK or the lane) and relays to the client's `relay`, if any. The lane reads `at`
    itself; a caller that cannot enters `kept` around its request."""

    def __init__(self, timeout_s: float, max_timeout_s: float | None, relay: ProgressFn | None) -> None:
        self.timeout_s = timeout_s
        self.most_s = max(timeout_s, max_timeout_s if max_timeout_s is not None else 10 * timeout_s)
        """The longest the call may take with progress (no server may hold a call forever by reporting)."""
        self.started = asyncio.get_running_loop().time()
        """When the call began (the event loop's time: `anyio.current_time()` on the asyncio loop the gateway runs,
        read without its three calls, as every call makes a deadline)."""
        self._relay = relay
        self.at = self.started + timeout_s
        self._scope: anyio.CancelScope | None = None
        """The cancel scope `kept` enforces `at` with (None outside it)."""
        self.extended = False
        self._paced: Throttle | None = None
        """Made with the first progress relayed: most calls report none."""
        self._skipped: list[tuple[float, float | None, str | None]] = []
        """Progress not relayed since the last that was (only the newest is kept, and how many there were)."""
        self._count = 0
        self._sending = 0
        self._idle: anyio.Event | None = None
        """Set when the last relay on its way is through: the result waits for it (`flush`)."""

    @contextmanager
    def kept(self) -> Iterator[None]:
        """Cancel what runs inside when `at` passes, then raise TimeoutError (for a caller that does not watch `at`:
        a cancel scope costs more than the lane's own work, so the lane watches it instead)."""
        with anyio.CancelScope(deadline=self.at) as scope:
            self._scope = scope
            try:
                yield
            finally:
                self._scope = None
        if scope.cancelled_caught:
            raise TimeoutError

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.at = min(anyio.current_time() + self.timeout_s, self.started + self.most_s)
        if self._scope is not None:
            self._scope.deadline = self.at
        self.extended = True
        if self._relay is None:
            return
        if self._paced is None:
            self._paced = Throttle(PROGRESS_PER_S)
        if not self._paced.admit("")[0]:
            self._skipped[:] = [(progress, total, message)]
            self._count += 1
            return
        await self._send(progress, total, message)

    async def flush(self) -> None:
        """The call ended: the client gets the newest progress it missed, saying how many it missed, and every
        progress still on its way to the client gets there before the result does. The SDK runs each progress
        callback in a task of its own; a result that overtook it ends the request first, and the client drops
        progress of a finished request (the client matrix saw a busy machine lose the last step so)."""
        if self._skipped:
            self._count -= 1  # the newest is sent now
            await self._send(*self._skipped[0])
        while self._sending:
            self._idle = anyio.Event()
            await self._idle.wait()

    async def _send(self, progress: float, total: float | None, message: str | None) -> None:
        assert self._relay is not None
        if self._count:  # said in the message of the next one sent
            message = f"{message + ' ' if message else ''}({self._count:,} progress updates skipped)"
        self._skipped, self._count = [], 0
        self._sending += 1
        try:
            await self._relay(progress, total, message)
        finally:
            self._sending -= 1
            if not self._sending and self._idle is not None:
                self._idle.set()

    @property
    def limit(self) -> tuple[float, str]:
        """The limit that ended a timed-out call: seconds, and the setting that holds it."""
        return (self.most_s, "max_timeout_s") if self.extended else (self.timeout_s, "timeout_s")
