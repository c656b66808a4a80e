"""What a per-user server offers one person: its resources, templates and prompts as that identity's own process
lists them (DESIGN §16: everything a person's process offers is that identity's; another gets "not found").

A `Pool` runs one process per identity, and what such a process lists may be its user's alone (their
repositories, files, saved prompts). So these listings are cached per identity (`<server>#<reloads>:<kind>@<identity
key>`, the catalog's TTL, dropped on that process's `list_changed`) and merged into a per-identity *view* of
the shared catalog: the same catalog object for tools and for every other server, so whatever is cached per
catalog object (exposure, Think's known tools, the search index) is not rebuilt per caller. Tools of a pool
stay in the shared catalog, listed once from any member: one server's software lists the same tools for all
(`wake` starts the caller's process of a pool that has none, so they can be listed).
"""

import logging
from collections.abc import Mapping
from functools import partial
from typing import Any, TypeVar

import anyio
import mcp.types as types
from cachetools import LRUCache

from gateway.config import NamespaceConfig
from gateway.downstreams.downstream import Downstream
from gateway.downstreams.pool import Pool
from gateway.downstreams.relay import Relay
from gateway.downstreams.state import State
from gateway.errors import DownstreamFailed, DownstreamUnavailable, GatewayError
from gateway.pipeline import Call
from gateway.routing import names, signin
from gateway.routing.catalog import Catalog, Entry
from gateway.routing.features import Who
from gateway.routing.uris import Uris
from gateway.store.cache import SharedCache

logger = logging.getLogger(__name__)

KINDS = ("resources", "resource_templates", "prompts")
"""What a pool lists per identity (its tools are listed once, for all)."""
VIEWS = 1024
"""Identities whose merged view is kept (the least recently used is rebuilt on its next call)."""
LISTINGS = 4096
"""Per-identity listings kept (the least recently used is listed again when needed): in a cache of their own, so
many users never push the shared catalog's listings out of the registry's."""
_NOTHING: list[Any] = []
Listed = TypeVar("Listed", types.Resource, types.ResourceTemplate)


class Personal:
    """Per-identity listings of the per-user servers, and each identity's view of the catalog."""

    def __init__(
        self,
        downstreams: Mapping[str, Downstream | Pool],
        uris: Uris,
        cache: SharedCache,
        namespace: NamespaceConfig,
        bare: frozenset[str],
        relay: Relay,
    ) -> None:
        self.downstreams = downstreams
        self.relay = relay
        self.uris = uris
        self._cache = SharedCache(maxsize=LISTINGS, timer=cache.now)  # the registry's clock (tests set it)
        self._ns = namespace
        self._bare = bare
        self._epochs: dict[str, int] = {}
        """Bumped when a server is replaced (a reload): every identity's listing of it is then outdated at once."""
        self._views: LRUCache[str, tuple[tuple[object, ...], Catalog]] = LRUCache(maxsize=VIEWS)

    def key(self, server: str, kind: str, audience: str) -> str:
        return f"{server}#{self._epochs.get(server, 0)}:{kind}@{audience}"

    def changed(self, server: str, kind: str, audience: str) -> None:
        """That identity's process of `server` said its `kind` list changed."""
        self._cache.invalidate(self.key(server, kind, audience))
        if kind == "resources":
            self._cache.invalidate(self.key(server, "resource_templates", audience))

    def replaced(self, server: str) -> None:
        self._epochs[server] = self._epochs.get(server, 0) + 1

    async def for_call(self, shared: Catalog, call: Call) -> Catalog:
        """The catalog `call` needs: its caller's view for a listing, and for a prompt the shared catalog lacks (no
        process is asked for anything else: a URI names its server, and the caller's own process answers it)."""
        match call.method, call.params:
            case "prompts/list" | "resources/list" | "resources/templates/list", _:
                pass
            case "prompts/get", {"name": str(name)} if name not in shared.prompts:
                pass
            case "completion/complete", {"ref": {"type": "ref/prompt", "name": str(name)}} if (
                name not in shared.prompts
            ):
                pass
            case _:
                return shared
        return await self.view(shared, (call.session.identity, call.secrets))

    async def view(self, shared: Catalog, who: Who) -> Catalog:
        """`shared` with the per-user servers' resources, templates and prompts as `who`'s own processes list them."""
        pools = [server for server, ds in self.downstreams.items() if isinstance(ds, Pool)]
        if not pools:
            return shared
        audience = who[0].key
        stale = [(s, k) for s in pools for k in KINDS if not self._cache.is_fresh(self.key(s, k, audience))]
        if stale:
            async with anyio.create_task_group() as tg:
                for server, kind in stale:
                    tg.start_soon(self._refresh, server, kind, who)
        listings = {(s, k): self._cache.peek(self.key(s, k, audience)) or _NOTHING for s in pools for k in KINDS}
        # Listings are replaced, never mutated: if the view was built from these very objects, it holds (they are
        # kept with it, so no other object can come to have the identity of one).
        built = (shared, *listings.values())
        kept = self._views.get(audience)
        if kept is not None and len(kept[0]) == len(built) and all(a is b for a, b in zip(kept[0], built, strict=True)):
            return kept[1]
        view = self._merge(shared, listings)
        self._views[audience] = (built, view)
        return view

    async def _refresh(self, server: str, kind: str, who: Who) -> None:
        ttl_s = self._ns.catalog_ttl_s
        try:
            await self._cache.get(self.key(server, kind, who[0].key), lambda: self._load(server, kind, who), ttl_s)
        except GatewayError as exc:  # e.g. no secrets of this user: the listing goes on without the server
            logger.info("server %s: no %s listed for %s: %s", server, kind, who[0].name, exc.logged())

    async def _load(self, server: str, kind: str, who: Who) -> list[Any]:
        pool = self.downstreams[server]
        assert isinstance(pool, Pool)
        async with pool.lease(*who) as ds:  # the caller's own process (started now if it was not running)
            await ds.settled()
            try:
                return await ds.list_all(kind)
            except (DownstreamFailed, DownstreamUnavailable) as exc:
                # Up but unable to list this kind (as `Registry`), or not up: nothing, for the TTL, so the caller's
                # every request does not wait for it again; a process that comes up says its lists changed.
                logger.info("server %s: no %s listing for %s (%s)", server, kind, who[0].name, exc)
                return []

    def _merge(self, shared: Catalog, listings: dict[tuple[str, str], list[Any]]) -> Catalog:
        ns = self._ns
        mine: list[tuple[str, types.Prompt]] = [
            (s, p) for (s, k), items in listings.items() if k == "prompts" for p in items
        ]
        # Named together with the shared prompts, so no two names of the view can clash.
        pairs = [(e.server, e.original) for e in shared.prompts.values()] + [(s, p.name) for s, p in mine]
        exposed = names.assign(pairs, ns.separator, ns.max_name_length, self._bare)
        prompts: dict[str, Entry] = {}
        for entry in shared.prompts.values():
            name = exposed[entry.server, entry.original]
            item = entry.item if name == entry.exposed else entry.item.model_copy(update={"name": name})
            prompts[name] = Entry(name, entry.server, entry.original, item)
        for server, prompt in mine:
            name = exposed[server, prompt.name]
            prompts[name] = Entry(name, server, prompt.name, prompt.model_copy(update={"name": name}))
        resources, templates = list(shared.resources), list(shared.resource_templates)
        for (server, kind), items in listings.items():
            if kind == "resources":
                resources += [self.exposed(server, r) for r in items]
            elif kind == "resource_templates":
                templates += [self.exposed(server, t) for t in items]
        return Catalog(tools=shared.tools, prompts=prompts, resources=resources, resource_templates=templates)

    def exposed(self, server: str, item: Listed) -> Listed:
        """A resource or template of `server` as the client sees it: its URI and name namespaced."""
        name = item.name if server in self._bare else f"{server}{self._ns.separator}{item.name}"
        if isinstance(item, types.ResourceTemplate):
            return item.model_copy(update={"uri_template": self.uris.exposed(server, item.uri_template), "name": name})
        return item.model_copy(update={"uri": self.uris.exposed(server, item.uri), "name": name})

    async def _wake_for_listing(self, pool: Pool) -> bool:
        """The tools of a server the caller has not signed in to, listed from someone's who has (shown to all,
        callable by those signed in)."""
        try:
            return await pool.wake_for_listing()
        except GatewayError as exc:
            logger.info("server %s: no one's connection could list its tools: %s", pool.name, exc.logged())
            return False

    async def wake(self, call: Call, name: str | None = None) -> bool:
        """Per-user servers with no process yet start the caller's, so their tools can be listed; any woken?

        With `name` (a tool being called, perhaps before any listing), only the server it belongs to.

        Raises:
            GatewayError: why the server that `name` belongs to could not start (e.g. a missing secret).
        """
        woken, sep = False, self._ns.separator
        for server, ds in self.downstreams.items():
            if not isinstance(ds, Pool) or ds.state is not State.IDLE:
                continue  # most servers, on every call: decided before a name is built
            if name is not None and not name.startswith(f"{server}{sep}"):
                continue
            try:
                if name is None:
                    await ds.wake(call.session.identity, call.secrets)
                else:  # the caller of one of its tools may be asked to sign in first
                    await signin.signing_in(self.relay, call, partial(ds.wake, call.session.identity, call.secrets))
                woken = True
            except GatewayError as exc:  # no secrets of this user: the listing goes on without the server
                if name is not None:
                    raise
                logger.info("server %s: not started for %s: %s", server, call.session.identity.name, exc.logged())
                woken = await self._wake_for_listing(ds) or woken
        return woken
