"""Per-client sessions: what the gateway remembers about one connected client."""

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cachetools import TTLCache

from gateway.identity import ANONYMOUS, Identity


@dataclass(slots=True)
class Session:
    """State kept per client session, shared by all its calls."""

    key: str
    """The identity's key, then the MCP session id (HTTP), "stdio", or the peer: two principals never share one."""
    identity: Identity = ANONYMOUS
    """Who opened the session; every request on it comes from the same principal (the key includes it)."""
    first_response_seen: bool = False
    """Set after the first tool result went out (the driver bootstrap rides on that one)."""
    active_runs: dict[str, str] = field(default_factory=dict[str, str])
    """Think runs this session drives: workflow name -> run id."""
    data: dict[str, Any] = field(default_factory=dict[str, Any])
    """Per-session scratch for middlewares, keyed by middleware name."""


class SessionStore:
    """Sessions by key; idle ones expire (an HTTP client that went away leaves nothing behind)."""

    def __init__(self, ttl_s: float = 3600.0, maxsize: int = 10_000, timer: Callable[[], float] = time.monotonic):
        self._sessions: TTLCache[str, Session] = TTLCache(maxsize=maxsize, ttl=ttl_s, timer=timer)

    def get(self, key: str, identity: Identity = ANONYMOUS) -> Session:
        session = self._sessions.get(key)
        if session is None or session.identity.key != identity.key:
            # Keys embed the identity's key, so a mismatch means a new principal: never hand it another's state.
            session = Session(key, identity)
        session.identity = identity  # the same principal; a refreshed token may carry new groups or scopes
        self._sessions[key] = session  # re-insert refreshes the idle timer
        return session

    def drop(self, key: str) -> None:
        """Forget a session that ended (its client closed it): nothing of it outlives the connection."""
        self._sessions.pop(key, None)

    def __len__(self) -> int:
        return len(self._sessions)
