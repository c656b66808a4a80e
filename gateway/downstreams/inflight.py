"""A count of the calls in flight through something that may be retired (a server, a pipeline), and a wait
until none is left, so it can be closed without cutting one off."""

from collections.abc import Iterator
from contextlib import contextmanager

import anyio


class InFlight:
    def __init__(self) -> None:
        self.count = 0
        # Nothing here may need a running event loop: gateways are built before uvicorn starts one.
        self._idle = anyio.Event()
        self._idle.set()

    @contextmanager
    def counted(self) -> Iterator[None]:
        self.count += 1
        self._idle = anyio.Event() if self.count == 1 else self._idle
        try:
            yield
        finally:
            self.count -= 1
            if self.count == 0:
                self._idle.set()

    async def idle(self) -> None:
        """Wait until no call is in flight (at once when none is)."""
        await self._idle.wait()
