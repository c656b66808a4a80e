"""SharedCache: TTL entries with single-flight loading and stale-on-error, shared by every consumer."""

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import anyio
from cachetools import LRUCache

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(slots=True)
class _Entry:
    value: Any
    expires_at: float


class SharedCache:
    """One cache for catalogs and version lists.

    * `get()` returns a fresh value, or loads it; concurrent callers of one key share one load.
    * When a load fails and an expired value exists, the stale value is served and the failure
      logged (once per key until a load succeeds); with nothing cached the error propagates.
    * Expired values are kept (bounded by `maxsize`, least recently used dropped) for that reason.
    """

    def __init__(self, *, maxsize: int = 4096, timer: Callable[[], float] = time.monotonic) -> None:
        self._entries: LRUCache[str, _Entry] = LRUCache(maxsize=maxsize)
        self._locks: dict[str, anyio.Lock] = {}
        self._failing: set[str] = set()
        self._timer = timer

    def peek(self, key: str) -> Any | None:
        """The cached value, fresh or stale, without loading."""
        entry = self._entries.get(key)
        return None if entry is None else entry.value

    def is_fresh(self, key: str) -> bool:
        entry = self._entries.get(key)
        return entry is not None and entry.expires_at > self._timer()

    def invalidate(self, key: str) -> None:
        """Mark the value expired; the next `get()` reloads (the stale value still backs failures)."""
        entry = self._entries.get(key)
        if entry is not None:
            entry.expires_at = float("-inf")

    def put(self, key: str, value: Any, ttl_s: float) -> None:
        self._entries[key] = _Entry(value, self._timer() + ttl_s)

    async def get(self, key: str, loader: Callable[[], Awaitable[T]], ttl_s: float) -> T:
        if self.is_fresh(key):
            return cast(T, self._entries[key].value)
        lock = self._locks.setdefault(key, anyio.Lock())
        async with lock:
            if self.is_fresh(key):  # another caller loaded it while we waited
                return cast(T, self._entries[key].value)
            try:
                value = await loader()
            except Exception as exc:
                stale = self._entries.get(key)
                if stale is None:
                    raise
                if key not in self._failing:
                    logger.warning("cache %s: load failed (%s); serving the stale value", key, exc)
                    self._failing.add(key)
                return cast(T, stale.value)
            self._failing.discard(key)
            self.put(key, value, ttl_s)
            return value
