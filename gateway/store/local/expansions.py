"""Requests learned from use, in this process's memory (the local backend: one process, nothing to share).

Bounded twice (DESIGN §14): LEARNED_PER_TOOL requests per tool (the oldest go) and LEARNED_TOOLS tools (the least
recently taught goes).
"""

from collections import OrderedDict

from gateway.store.expansions import LEARNED_PER_TOOL, LEARNED_TOOLS


class LocalExpansions:
    where = "local"

    def __init__(self, *, per_tool: int = LEARNED_PER_TOOL, tools: int = LEARNED_TOOLS) -> None:
        self._learned: OrderedDict[str, list[str]] = OrderedDict()
        self._per_tool, self._tools = per_tool, tools

    async def add(self, key: str, request: str) -> None:
        kept = [r for r in self._learned.pop(key, []) if r != request]
        self._learned[key] = [request, *kept][: self._per_tool]
        while len(self._learned) > self._tools:
            self._learned.popitem(last=False)

    async def all(self) -> dict[str, list[str]]:
        return {key: list(requests) for key, requests in self._learned.items()}

    async def remove(self, key: str, request: str | None = None) -> bool:
        kept = self._learned.get(key)
        if kept is None or (request is not None and request not in kept):
            return False
        if request is None or kept == [request]:
            del self._learned[key]
        else:
            kept.remove(request)
        return True
