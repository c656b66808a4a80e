"""The call log in this process's memory (one gateway): a deque bounded by count and by bytes (each call measured
once, as encoded for Redis, so both backends bound alike), and whose calls keep their arguments (in memory too:
a restart forgets the choice, as it forgets the calls, and keeps no one's arguments until they choose again)."""

import time
from collections import deque
from collections.abc import Sequence
from typing import Any

from gateway.store.calls import dumped


class LocalCallLog:
    where = "local"

    def __init__(self, *, max_calls: int = 500, max_bytes: int = 16 * 1024 * 1024) -> None:
        self.max_calls = max_calls
        self.max_bytes = max_bytes
        self.held = 0
        self._calls: deque[tuple[str, dict[str, Any], int]] = deque()
        self._counts: dict[str, dict[str, Any]] = {}
        self._arguments: frozenset[str] = frozenset()

    async def add(self, calls: Sequence[tuple[str, dict[str, Any]]]) -> None:
        for owner, call in calls:
            size = len(dumped(call))
            self._calls.append((owner, call, size))
            self.held += size
        while len(self._calls) > self.max_calls or (self.held > self.max_bytes and len(self._calls) > 1):
            self.held -= self._calls.popleft()[2]

    async def recent(self, owners: frozenset[str] | None) -> list[dict[str, Any]]:
        return [call for owner, call, _ in reversed(self._calls) if owners is None or owner in owners]

    async def put_counts(self, replica: str, counts: dict[str, Any]) -> None:
        self._counts = {replica: {**counts, "at": time.time()}}

    async def counts(self) -> dict[str, dict[str, Any]]:
        return dict(self._counts)

    async def keep_arguments(self, owner: str, on: bool) -> None:
        self._arguments = self._arguments | {owner} if on else self._arguments - {owner}

    async def arguments_kept(self) -> frozenset[str]:
        return self._arguments
