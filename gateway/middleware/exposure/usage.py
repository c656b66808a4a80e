"""The calls each identity makes, counted for `auto`'s fill order (pins, then the most used, then the catalog's).

Counting is a dict increment on the call's path; the store (`gateway.store.base.Usage`: memory, or Redis so
replicas share the counts) is written by a background task, in batches: while one write is out, the next
calls' counts gather for the following one. A `tools/list` that fills by usage first writes what is pending
(one lock orders it after a write in flight), so an identity's own calls count in its next list. A store that
fails costs the counts of that batch (they only order a list) and a warning a minute, never a call.
"""

import logging
from collections import Counter, defaultdict

import anyio
from anyio.abc import TaskGroup

from gateway.store.base import StoreUnavailable, Usage
from gateway.telemetry import Repeating

logger = logging.getLogger(__name__)
repeats = Repeating(logger)

MAX_PENDING = 10_000
"""(owner, tool) pairs gathered at most between two writes; past it a call is not counted (the store is behind)."""


class UsageTally:
    def __init__(self, store: Usage) -> None:
        self.store = store
        self._pending: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self._size = 0
        self._lock = anyio.Lock()
        self._group: TaskGroup | None = None
        self._scheduled = False

    def bind(self, group: TaskGroup) -> None:
        """Write counts in the background from now on (the gateway's task group, while it runs)."""
        self._group = group

    def note(self, owner: str, tool: str) -> None:
        """Count one call of `tool` (canonical name) by `owner`; never waits."""
        mine = self._pending[owner]
        if tool not in mine:
            if self._size >= MAX_PENDING:
                repeats.warning("tool usage: %d counts wait for the store; calls go uncounted", self._size)
                return
            self._size += 1
        mine[tool] += 1
        if self._group is not None and not self._scheduled:
            self._scheduled = True
            self._group.start_soon(self._drain)

    async def _drain(self) -> None:
        try:
            while self._pending:
                await self.flush()
        finally:
            self._scheduled = False  # no await since the loop found nothing pending: no count is left behind

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
        """The owner's most used tools, most first, counting its calls so far; empty when the store fails."""
        await self.flush()
        try:
            return await self.store.top(owner, limit)
        except StoreUnavailable as exc:
            repeats.warning("tool usage: %s; lists are filled in catalog order", exc)
            return []
