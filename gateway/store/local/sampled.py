"""Sampled expansions in this process's memory (the local backend: one process, nothing to share)."""

from gateway.store.expansions import SAMPLED_TOOLS


class LocalSampled:
    where = "local"

    def __init__(self, *, tools: int = SAMPLED_TOOLS) -> None:
        self._kept: dict[str, list[str]] = {}
        self._tools = tools

    async def put(self, key: str, requests: list[str]) -> bool:
        if key not in self._kept and len(self._kept) >= self._tools:
            return False
        self._kept[key] = list(requests)
        return True

    async def all(self) -> dict[str, list[str]]:
        return {key: list(requests) for key, requests in self._kept.items()}

    async def remove(self, key: str) -> bool:
        if key not in self._kept:
            return False
        had, self._kept[key] = bool(self._kept[key]), []
        return had
