"""Tool call counts per identity in this process's memory (the local backend: one process, nothing to share).

Bounded twice: at most `owners` identities (the least recently counted is forgotten first) and USAGE_KEPT tools
each (the least called go).
"""

from collections import Counter, OrderedDict
from collections.abc import Mapping

from gateway.store.base import USAGE_KEPT, most_used


class LocalUsage:
    where = "local"

    def __init__(self, *, owners: int = 10_000, kept: int = USAGE_KEPT) -> None:
        self._counts: OrderedDict[str, Counter[str]] = OrderedDict()
        self._owners, self._kept = owners, kept

    async def add(self, owner: str, counts: Mapping[str, int]) -> None:
        mine = self._counts.setdefault(owner, Counter())
        self._counts.move_to_end(owner)
        mine.update(counts)
        if len(mine) > self._kept:
            self._counts[owner] = Counter(dict(most_used(mine.items())[: self._kept]))
        while len(self._counts) > self._owners:
            self._counts.popitem(last=False)

    async def top(self, owner: str, limit: int) -> list[str]:
        return [name for name, _n in most_used(self._counts.get(owner, Counter()).items())[:limit]]
