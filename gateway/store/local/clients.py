"""What one gateway process remembers per client (`gateway.store.base.ClientShare`) on the local store: memory,
bounded in count and time. One process serves every session of its clients, so nothing needs sharing; a claim is
atomic because nothing awaits between its test and its set (one event loop)."""

import time
from collections.abc import Callable

from cachetools import TTLCache


class LocalClients:
    def __init__(self, window_s: float, *, maxsize: int = 10_000, timer: Callable[[], float] = time.monotonic) -> None:
        self.window_s = window_s
        self._boots: TTLCache[str, bool] = TTLCache(maxsize=maxsize, ttl=window_s, timer=timer)
        """Clients whose driver prompt went out, by client key: set once, expired `window_s` after that."""
        self._promoted: TTLCache[str, tuple[str, ...]] = TTLCache(maxsize=maxsize, ttl=window_s, timer=timer)
        """The tools each client found, re-inserted by every read and write (an idle expiry)."""

    async def claim_first(self, client: str) -> bool:
        if client in self._boots:
            return False
        self._boots[client] = True
        return True

    async def promoted(self, client: str) -> list[str]:
        names = self._promoted.get(client)
        if names is None:
            return []
        self._promoted[client] = names  # re-insert: restarts the idle expiry
        return list(names)

    async def promote(self, client: str, names: list[str]) -> None:
        self._promoted[client] = tuple(names)
