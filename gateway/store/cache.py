"""SharedCache: TTL entries with single-flight loading and stale-on-error, shared by every consumer."""

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import anyio
from cachetools import LRUCache

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(slots=True)
class _Entry:
    value: Any
    expires_at: float


@dataclass(slots=True)
class _Flight:
    """One load in progress; callers that arrive meanwhile wait for its outcome instead of loading again."""

    done: anyio.Event = field(default_factory=anyio.Event)
    finished: bool = False
    """Still False when `done` is set: the loading caller was cancelled, so a waiter loads instead."""
    value: Any = None
    error: Exception | None = None
    invalidated: bool = False
    """Set by `invalidate()` mid-load: what this load fetched may predate the change, so it is stored expired."""


class SharedCache:
    """One cache for catalogs and version lists.

    * `get()` returns a fresh value, or loads it; concurrent callers of one key share one load and
      its outcome, failure included (a hanging downstream must not be asked once per waiting caller).
    * When a load fails and an expired value exists, the stale value is served and the failure
      logged (once per key until a load succeeds); with nothing cached the error propagates.
    * Expired values are kept (bounded by `maxsize`, least recently used dropped) for that reason.
    """

    def __init__(self, *, maxsize: int = 4096, timer: Callable[[], float] = time.monotonic) -> None:
        self._entries: LRUCache[str, _Entry] = LRUCache(maxsize=maxsize)
        self._flights: dict[str, _Flight] = {}
        self._failing: set[str] = set()
        self._timer = timer
        self.generation = 0
        """Bumped whenever a value is stored or invalidated, so a value derived from entries can tell it still holds."""

    def peek(self, key: str) -> Any | None:
        """The cached value, fresh or stale, without loading."""
        entry = self._entries.get(key)
        return None if entry is None else entry.value

    def is_fresh(self, key: str) -> bool:
        return self.expires_at(key) > self._timer()

    def expires_at(self, key: str) -> float:
        """When the cached value stops being fresh (on the cache's timer); -inf when there is none."""
        entry = self._entries.get(key)
        return float("-inf") if entry is None else entry.expires_at

    def now(self) -> float:
        return self._timer()

    def invalidate(self, key: str) -> None:
        """Mark the value expired; the next `get()` reloads (the stale value still backs failures).

        A load already in flight may have fetched the old value (a `list_changed` racing a listing):
        later callers start a new load instead of joining it, and its result is stored already expired.
        """
        entry = self._entries.get(key)
        if entry is not None:
            entry.expires_at = float("-inf")
        self.generation += 1
        flight = self._flights.pop(key, None)
        if flight is not None:
            flight.invalidated = True

    def put(self, key: str, value: Any, ttl_s: float) -> None:
        self._store(key, _Entry(value, self._timer() + ttl_s))

    def _store(self, key: str, entry: _Entry) -> None:
        self._entries[key] = entry  # may evict the least recently used entry
        self.generation += 1

    async def get(self, key: str, loader: Callable[[], Awaitable[T]], ttl_s: float) -> T:
        while True:
            if self.is_fresh(key):
                return cast(T, self._entries[key].value)
            flight = self._flights.get(key)
            if flight is None:
                return await self._load(key, loader, ttl_s)
            await flight.done.wait()
            if flight.finished:
                if flight.error is not None:
                    raise flight.error
                return cast(T, flight.value)

    async def _load(self, key: str, loader: Callable[[], Awaitable[T]], ttl_s: float) -> T:
        flight = self._flights[key] = _Flight()
        try:
            try:
                value = await loader()
            except Exception as exc:
                stale = self._entries.get(key)
                if stale is None:
                    flight.error, flight.finished = exc, True
                    raise
                if key not in self._failing:
                    logger.warning("cache %s: load failed (%s); serving the stale value", key, exc)
                    self._failing.add(key)
                flight.value, flight.finished = stale.value, True
                return cast(T, stale.value)
            self._failing.discard(key)
            if not flight.invalidated:
                self.put(key, value, ttl_s)
            elif not self.is_fresh(key):  # kept for `peek`, but expired so the next `get` reloads
                self._store(key, _Entry(value, float("-inf")))
            flight.value, flight.finished = value, True
            return value
        finally:
            if self._flights.get(key) is flight:
                del self._flights[key]
            flight.done.set()
