"""The calls each identity makes, counted for `auto`'s fill order (pins, then the most used, then the catalog's).

Counting is a dict increment on the call's path; the store (`gateway.store.base.Usage`: memory, or Redis so
replicas share the counts) is written by one background task, at most once per BATCH_S, with every count
gathered meanwhile: no task, no store round trip per call. A `tools/list` that fills by usage first writes
what is pending (one lock orders it after a write in flight), so an identity's own calls count in its next
list at once, and in other replicas' within BATCH_S. A store that fails costs the counts of that batch (they
only order a list) and a warning a minute, never a call.
"""

import logging
from collections import Counter, defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from gateway.store.base import StoreUnavailable, Usage
from gateway.telemetry.repeats import Repeating

logger = logging.getLogger(__name__)
repeats = Repeating(logger)

BATCH_S = 1.0
"""The background writer's pace: counts gathered over this long go to the store in one write per identity."""
MAX_PENDING = 10_000
"""(owner, tool) pairs gathered at most between two writes; past it a call is not counted (the store is behind)."""


class UsageTally:
    def __init__(self, store: Usage) -> None:
        self.store = store
        self._pending: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self._size = 0
        self._lock = anyio.Lock()
        self._wanted: anyio.Event | None = None
        """Set by the first count after a write, while the background writer runs (None: it does not)."""

    @asynccontextmanager
    async def running(self) -> AsyncIterator["UsageTally"]:
        """Write counts in the background while inside, in a task group of its own."""
        async with anyio.create_task_group() as tg:
            self._wanted = wanted = anyio.Event()
            tg.start_soon(self._write_behind, wanted)
            try:
                yield self
            finally:
                self._wanted = None
                tg.cancel_scope.cancel()

    def note(self, owner: str, tool: str) -> None:
        """Count one call of `tool` (canonical name) by `owner`; never waits."""
        mine = self._pending.get(owner)
        if mine is None or tool not in mine:
            if self._size >= MAX_PENDING:
                repeats.warning("tool usage: %d counts wait for the store; calls go uncounted", self._size)
                return
            self._size += 1
            mine = self._pending[owner]
        mine[tool] += 1
        if self._wanted is not None:
            self._wanted.set()

    async def _write_behind(self, wanted: anyio.Event) -> None:
        while True:
            await wanted.wait()
            self._wanted = wanted = anyio.Event()  # before the write: a count during it asks for the next one
            await self.flush()
            await anyio.sleep(BATCH_S)  # gather: one write per identity per BATCH_S, however many calls

    async def flush(self) -> None:
        """Write every pending count (after a write in flight)."""
        async with self._lock:
            pending, self._pending, self._size = self._pending, defaultdict(Counter), 0
            for owner, counts in pending.items():
                try:
                    await self.store.add(owner, counts)
                except StoreUnavailable as exc:
                    repeats.warning("tool usage: %s; these counts are dropped (they only order lists)", exc)

    async def top(self, owner: str, limit: int) -> list[str]:
        """The owner's most used tools, most first, counting its calls so far (its own pending counts are written
        first; other identities' wait for the background writer); empty when the store fails."""
        async with self._lock:
            mine = self._pending.pop(owner, None)
            if mine:
                self._size -= len(mine)
                try:
                    await self.store.add(owner, mine)
                except StoreUnavailable as exc:
                    repeats.warning("tool usage: %s; these counts are dropped (they only order lists)", exc)
        try:
            return await self.store.top(owner, limit)
        except StoreUnavailable as exc:
            repeats.warning("tool usage: %s; lists are filled in catalog order", exc)
            return []
