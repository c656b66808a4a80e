"""The page's sign-ins (`gateway.store.signins.SignIns`) in this process's memory: one gateway, so nothing to
share; bounded in count (the oldest goes first) and in time (each record's own expiry)."""

import time
from collections.abc import Callable
from typing import Any

from gateway.store.signins import MAX_SIGNINS


class LocalSignIns:
    where = "local"

    def __init__(self, *, maxsize: int = MAX_SIGNINS, clock: Callable[[], float] = time.monotonic) -> None:
        self.maxsize = maxsize
        self._clock = clock
        self._records: dict[str, tuple[float, dict[str, Any]]] = {}
        """Key -> (when it expires on `clock`, record), oldest first."""

    async def put(self, key: str, record: dict[str, Any], ttl_s: float) -> None:
        now = self._clock()
        if len(self._records) >= self.maxsize:
            self._records = {k: v for k, v in self._records.items() if v[0] > now}
            while len(self._records) >= self.maxsize:
                del self._records[next(iter(self._records))]
        self._records[key] = (now + ttl_s, record)

    async def get(self, key: str) -> dict[str, Any] | None:
        found = self._records.get(key)
        if found is None:
            return None
        if found[0] <= self._clock():
            del self._records[key]
            return None
        return found[1]

    async def take(self, key: str) -> dict[str, Any] | None:
        record = await self.get(key)
        self._records.pop(key, None)
        return record

    async def delete(self, key: str) -> None:
        self._records.pop(key, None)
