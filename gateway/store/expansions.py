"""What the store keeps for the tool search: requests in users' words learned from use and written by clients'
models (`gateway.middleware.exposure.expansions` reads both)."""

from typing import Protocol

LEARNED_PER_TOOL = 8
"""Requests learned from use kept per tool (the most recent): enough words for its users' phrasings, too few to
drown its own description."""
LEARNED_TOOLS = 2_000
"""Tools with learned requests kept per gateway (the catalog): past it the least recently taught is forgotten."""


class LearnedExpansions(Protocol):
    """Requests in users' words learned from use (DESIGN §14): a `find_tools` query followed by a call of a tool
    it found becomes that tool's expansion. Keyed by the tool's canonical (registry) name, which a client rule's
    renaming does not change; bounded by LEARNED_PER_TOOL and LEARNED_TOOLS, shared by replicas on Redis."""

    where: str

    async def add(self, key: str, request: str) -> None:
        """Remember `request` for the tool `key` (most recent first; a repeat moves to the front)."""
        ...

    async def all(self) -> dict[str, list[str]]:
        """Every tool's learned requests, most recent first."""
        ...

    async def remove(self, key: str, request: str | None = None) -> bool:
        """Forget one request of the tool `key`, or all of them (None); whether anything was there."""
        ...


SAMPLED_TOOLS = 10_000
"""Tools whose sampled expansions are kept per gateway: past it a new tool's are not kept (a catalog of that size is
far past what the exposure indexes in one go; a changed description is a new entry, so the bound holds over time)."""


class SampledExpansions(Protocol):
    """Requests in users' words that a client's model wrote for a tool through MCP sampling (DESIGN §14), from the
    tool's name and description alone. Keyed by server, tool and description hash (`expansions.sampled_key`), so a
    changed tool is asked again; at most SAMPLED_TOOLS keys; shared by replicas on Redis."""

    where: str

    async def put(self, key: str, requests: list[str]) -> bool:
        """Keep `requests` for the tool `key` (replacing what was there); False when the store is full."""
        ...

    async def all(self) -> dict[str, list[str]]:
        """Every tool's sampled requests (an empty list: an operator removed them, see `remove`)."""
        ...

    async def remove(self, key: str) -> bool:
        """Drop the requests of the tool `key` but keep the key, with no requests: no replica asks a client's model
        about that tool again until its description (so its key) changes. Whether it had requests."""
        ...
