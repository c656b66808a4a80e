"""The caching hints on a list result (2026-07-28, server/utilities/caching): how long a client may keep it
(`ttlMs`) and whether a shared cache may hand it to someone else (`cacheScope`).

The SDK's default is `ttlMs: 0` (immediately stale), so every 2026-era client re-lists on every turn. The gateway
knows when its catalog may change: a server that announces a change (`list_changed`) is re-listed at once and
the change is passed on (to 2026-era clients on their `subscriptions/listen` stream; a notification invalidates a
fresh cache, per the spec); one that does not is re-listed when its cached listing runs out (`catalog_ttl_s`,
default 300 s). The TTL is therefore the time until the catalog's first listing is due to be re-read: no
change can show in the list before then without a notification. (`resources/read` keeps the SDK's 0 / private:
the gateway cannot know when a server's content changes.)

`private` whenever the list may differ per identity or session, `public` only when it is the same for everyone
("lists of tools, prompts, and resource templates when they are identical for all users"): policy rules
(`policed`) filter what each identity sees, per-user servers list each person's own, and for `tools/list` client
rules rename or budget per client, and a list that holds only part of the catalog (`search`, or `auto` over its
budget) holds what each session found and used.
"""

from collections.abc import Callable
from typing import TypeVar

import mcp.types as types

from gateway.downstreams.pool import Pool
from gateway.middleware.exposure.view import Exposure
from gateway.routing.registry import Registry
from gateway.session import Session

R = TypeVar("R", bound=types.CacheableResult)


class Freshness:
    def __init__(self, registry: Registry, exposure: Exposure | None, policed: Callable[[], bool]) -> None:
        self.registry = registry
        self.exposure = exposure
        self.policed = policed
        """Whether policy rules are configured now (a reload may add or drop them)."""

    async def hinted(self, method: str, result: R, session: Session) -> R:
        """`result` of `method` (a list) with its TTL and scope as this session's client may cache it."""
        private = await self._per_identity(method, session)
        ttl_ms = int(self.registry.fresh_for_s() * 1000)
        return result.model_copy(update={"ttl_ms": ttl_ms, "cache_scope": "private" if private else "public"})

    async def _per_identity(self, method: str, session: Session) -> bool:
        if self.policed() or any(isinstance(ds, Pool) for ds in self.registry.downstreams.values()):
            return True
        if method != "tools/list" or self.exposure is None:
            return False
        if self.exposure.config.clients:
            return True
        catalog = await self.registry.catalog()
        return self.exposure.searching(catalog, self.exposure.view(session).rule, session.task_mark)
