"""Expansions: requests in users' words added to a tool's search text (DESIGN §14).

A description says what a tool does in its server's words; users ask in theirs ("who can I hand this ticket
to" for `jira_search_assignable_users`). Each tool is indexed with a few such requests, from two sources:

* **Shipped packs** (`config/expansions/*.json`, one per server package; `mcp-doorway.json`: the gateway's own
  tools): written from each tool's own name, description and parameters, never from a labelled query. An entry is
  matched by the name the tool's server gives it and the hash of the description it was written for (a changed tool
  gets none rather than another's), not by the config's server name or the exposed name, which users shape freely.
* **Asked of the client's model** (`sampling.py`): a tool with no pack entry gets a few requests written by the model
  of a client that offers MCP sampling, from the tool's name and description alone. Kept in the store
  (`gateway.store.base.SampledExpansions`) by server, tool and description hash, shared by replicas, read back with
  the learned ones. Listed and removable for an operator's page (`sampled_listing`, `forget_sampled`).
* **Learned from use**: a `find_tools` query followed, in the same turn, by a call of a tool one of the turn's
  searches found becomes an expansion of that tool (a first query that missed included: that is the phrasing
  the index lacked). Learned requests are search text for every identity: a query holding an e-mail address, a
  URL or a token-like string is not learned (PRIVATE). Kept in the store (`gateway.store.base.LearnedExpansions`:
  bounded, shared by replicas), read back at most every REFRESH_S, listed and removable for an operator's page
  (`learned`, `forget`).
"""

import hashlib
import json
import logging
import math
import re
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from gateway.config.bundled import shipped
from gateway.store.base import StoreUnavailable
from gateway.store.expansions import LEARNED_PER_TOOL, LearnedExpansions, SampledExpansions
from gateway.telemetry.repeats import Repeating

logger = logging.getLogger(__name__)
repeats = Repeating(logger)

REFRESH_S = 5.0
"""How stale another replica's lessons may be here: the store is read at most this often, on a search."""
REQUEST_CHARS = 200
"""A learned request is cut here: a query may be 1,000 chars, a tool's expansion is a phrase."""
TURN_SEARCHES = 5
"""Searches a session's turn remembers until a call ends it (the oldest go first)."""
TURN_S = 600.0
"""A search older than this is no longer part of the turn a call ends."""
SESSIONS = 10_000
"""Sessions whose open turn is remembered (the least recently searching is forgotten first)."""
PRIVATE = re.compile(r"[^\s@]+@[^\s@]+\.\w|[a-z][a-z0-9+.-]*://|[A-Za-z0-9_+/=-]{24,}")
"""What a learned request must not carry: an e-mail address, a URL, or a token-like run of 24+ characters. A learned
request is search text for every identity (and a client's search hint), so a query holding one is not learned."""


def description_hash(description: str) -> str:
    """What a pack entry is keyed by beside the tool's name: the first 16 hex digits of the description's SHA-256."""
    return hashlib.sha256(description.encode()).hexdigest()[:16]


def packs_folder() -> Path:
    return shipped("config") / "expansions"


@cache
def _packs() -> dict[tuple[str, str], tuple[str, ...]]:
    """(tool's own name, description hash) -> requests over every shipped pack; a broken file is skipped and said."""
    found: dict[tuple[str, str], tuple[str, ...]] = {}
    for path in sorted(packs_folder().glob("*.json")):
        try:
            tools = json.loads(path.read_text(encoding="utf-8"))["tools"]
            for name, entry in tools.items():
                requests = tuple(str(r) for r in entry["requests"])
                found[str(name), str(entry["description_sha256"])] = requests
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            logger.warning(
                "expansion pack %s is unreadable (%s: %s); its tools get no expansions", path, type(exc).__name__, exc
            )
    return found


def shipped_for(tool: str, digest: str) -> tuple[str, ...]:
    """The pack entry written for the tool its server names `tool` (`Entry.original`: the exposed name is the user's
    to shape, by prefix, separator and length) with the description of hash `digest`; none for a changed one."""
    return _packs().get((tool, digest), ())


def sampled_key(server: str, tool: str, digest: str) -> str:
    """What sampled requests are kept by: the config's server name, the server's own tool name, the description's
    hash (`description_hash`: a changed description is a new tool to the model that wrote them)."""
    return f"{server}/{tool}#{digest}"


@dataclass(slots=True)
class _Search:
    at: float
    query: str
    found: frozenset[str]


@dataclass(slots=True)
class Expansions:
    """One gateway's expansions: the shipped packs and a cache of what the store learned (`learned`, `version`)."""

    store: LearnedExpansions | None = None
    learned: dict[str, list[str]] = field(default_factory=dict[str, list[str]])
    """Canonical tool name -> learned requests, most recent first (as last read from, or written to, the store)."""
    sampled_store: SampledExpansions | None = None
    sampled: dict[str, list[str]] = field(default_factory=dict[str, list[str]])
    """`sampled_key` -> what a client's model wrote for that tool (as last read from, or written to, the store)."""
    version: int = 0
    """Bumped whenever `learned` or `sampled` changed: an index built at another version rebuilds at its next search."""
    _read_at: float = -math.inf
    _turns: OrderedDict[str, list[_Search]] = field(default_factory=OrderedDict[str, list[_Search]])

    def of(self, server: str, original: str, exposed: str, description: str) -> list[str]:
        """A tool's expansions: its pack entry, else what a client's model wrote for it, then what use taught."""
        digest = description_hash(description)
        own = shipped_for(original, digest) or self.sampled.get(sampled_key(server, original, digest), ())
        return list(dict.fromkeys([*own, *self.learned.get(exposed, ())]))

    async def add_sampled(self, key: str, requests: list[str]) -> bool:
        """Keep what a client's model wrote for the tool `key` (`sampled_key`); whether it was kept."""
        if self.sampled_store is not None:
            try:
                if not await self.sampled_store.put(key, requests):
                    repeats.warning("sampled expansions: the store is full; %s gets none", key)
                    return False
            except StoreUnavailable as exc:
                repeats.warning("sampled expansions: %s; %s gets none for now", exc, key)
                return False
        self.sampled[key] = requests
        self.version += 1
        return True

    async def refresh(self) -> None:
        """Read what every replica learned, at most once per REFRESH_S; a failing store keeps the last copy."""
        now = time.monotonic()
        if self.store is None or now - self._read_at < REFRESH_S:
            return
        self._read_at = now
        try:
            learned = await self.store.all()
            sampled = self.sampled if self.sampled_store is None else await self.sampled_store.all()
        except StoreUnavailable as exc:
            repeats.warning("learned expansions: %s; searching with the last copy", exc)
            return
        if learned != self.learned or sampled != self.sampled:
            self.learned, self.sampled, self.version = learned, sampled, self.version + 1

    def searched(self, session: str, query: str, found: Sequence[str]) -> None:
        """A session's `find_tools` found these tools (canonical names): part of its turn until a call ends it."""
        now = time.monotonic()
        turn = [s for s in self._turns.pop(session, []) if now - s.at < TURN_S][-(TURN_SEARCHES - 1) :]
        self._turns[session] = [*turn, _Search(now, " ".join(query.split())[:REQUEST_CHARS], frozenset(found))]
        while len(self._turns) > SESSIONS:
            self._turns.popitem(last=False)

    async def called(self, session: str, tool: str) -> list[str]:
        """A session called `tool` (canonical name), ending its turn: when one of the turn's searches found it, every
        query of the turn becomes its expansion. Returns the requests learned (usually none)."""
        turn = self._turns.pop(session, None)
        now = time.monotonic()
        if not turn or not any(tool in s.found for s in turn if now - s.at < TURN_S):
            return []
        taught = [s.query for s in turn if now - s.at < TURN_S and not PRIVATE.search(s.query)]
        for request in taught:
            await self._add(tool, request)
        return taught

    async def _add(self, tool: str, request: str) -> None:
        if self.store is not None:
            try:
                await self.store.add(tool, request)
            except StoreUnavailable as exc:
                repeats.warning("learned expansions: %s; %r is not learned for %s", exc, request, tool)
                return
        kept = self.learned.get(tool, [])
        self.learned[tool] = [request, *(r for r in kept if r != request)][:LEARNED_PER_TOOL]
        self.version += 1

    async def listing(self) -> dict[str, list[str]]:
        """What every replica learned, fresh from the store (for an operator's page): canonical tool name -> requests,
        most recently taught tool first.

        Raises:
            StoreUnavailable: the store cannot be read (the page says so).
        """
        if self.store is not None:
            learned = await self.store.all()
            if learned != self.learned:
                self.learned, self.version = learned, self.version + 1
        return {tool: list(requests) for tool, requests in self.learned.items()}

    async def forget(self, tool: str, request: str | None = None) -> bool:
        """Remove one learned request of `tool`, or all of them (the page's remove button); whether any was there."""
        gone = await self.store.remove(tool, request) if self.store is not None else False
        kept = self.learned.get(tool)
        if kept is not None:
            left = [] if request is None else [r for r in kept if r != request]
            if left:
                self.learned[tool] = left
            else:
                del self.learned[tool]
            self.version += 1
            gone = gone or self.store is None
        return gone

    async def sampled_listing(self) -> dict[str, list[str]]:
        """What clients' models wrote, fresh from the store (for an operator's page): `sampled_key` -> requests, the
        removed ones left out; raises StoreUnavailable as `listing` does."""
        if self.sampled_store is not None:
            sampled = await self.sampled_store.all()
            if sampled != self.sampled:
                self.sampled, self.version = sampled, self.version + 1
        return {key: list(requests) for key, requests in self.sampled.items() if requests}

    async def forget_sampled(self, key: str) -> bool:
        """Remove what a client's model wrote for the tool `key` on every replica (the page's remove button): the key
        stays with no requests, so the tool is not asked about again until its description changes. Whether it had
        requests."""
        had = await self.sampled_store.remove(key) if self.sampled_store is not None else bool(self.sampled.get(key))
        if had or key in self.sampled:
            self.sampled[key] = []
            self.version += 1
        return had
