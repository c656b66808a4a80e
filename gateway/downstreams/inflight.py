"""A count of the calls in flight through something that may be retired (a server, a pipeline), and a wait
until none is left, so it can be closed without cutting one off."""

from types import TracebackType

import anyio


class InFlight:
    """`with calls.counted():` around each call; `await calls.idle()` waits until none is in flight.

    The event is made only when someone waits: every call passes here, a retirement is rare.
    """

    def __init__(self) -> None:
        self.count = 0
        self._idle: anyio.Event | None = None

    def counted(self) -> "InFlight":
        return self

    def __enter__(self) -> None:
        self.count += 1

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.count -= 1
        if self.count == 0 and self._idle is not None:
            self._idle.set()
            self._idle = None

    async def idle(self) -> None:
        """Wait until no call is in flight (at once when none is)."""
        while self.count:
            if self._idle is None:
                self._idle = anyio.Event()
            await self._idle.wait()
