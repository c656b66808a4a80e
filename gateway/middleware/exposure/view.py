"""Exposure: what one session's `tools/list` holds (DESIGN §14). It lives beside the session, not in the registry.

The catalog is everything aggregated; a session sees, per its client rule:

* `all`: every tool the policy lets it see;
* `search`: the way in (ENTRY_POINTS: find/call and Think's entry points), `pin` globs, and the tools it
  found or called (promoted, LRU); every other tool, the gateway's own included, stays callable by its exact
  name and reachable through `gateway.find_tools`;
* `auto`: `all` while the catalog fits `max_tools` and `max_list_chars` (JSON of the listed definitions), else
  `search` filled up to both limits with more catalog tools: the identity's most used first (`usage.py`),
  then catalog order. One tool over is no cliff.

A session's rule and state are `rules.py`'s; how one tool reads when listed, and its size, `listed.py`'s; what
`auto` weighs and which tools fill its list, `budget.py`'s. Derived
data (names per separator, the search index, sizes) is rebuilt when the registry hands out a new catalog object.
"""

from collections import OrderedDict
from collections.abc import Callable
from fnmatch import fnmatchcase
from typing import Any

import mcp.types as types

from gateway.config import ExposureConfig, NamespaceConfig
from gateway.errors import GatewayError
from gateway.middleware.exposure.budget import Budget, Fit
from gateway.middleware.exposure.listed import (
    ENTRY_POINTS,
    OWN_SERVERS,
    READ_OUTPUT,
    WORKFLOWS_ENTRY,
    as_listed,
)
from gateway.middleware.exposure.rules import STATE_KEY, Rule, View, native_rule, resolve
from gateway.middleware.exposure.search import Matches, SearchIndex
from gateway.routing import apps
from gateway.routing.catalog import Catalog, Entry
from gateway.routing.rename import Names, reference
from gateway.session import Session

Denial = Callable[[Session, Entry], GatewayError | None]
"""The policy hook: why this session may not see (list, find) nor call this tool (None: it may). Listing, search,
the suggestions of an unknown name and every call ask it: the one place the policy meets tools."""


def _everyone(session: Session, entry: Entry) -> GatewayError | None:
    return None


class Exposure(Budget):
    def __init__(
        self,
        config: ExposureConfig,
        namespace: NamespaceConfig,
        denial: Denial | None = None,
        bare: frozenset[str] = frozenset(),
        workflows: Callable[[], bool] = lambda: True,
    ) -> None:
        self.config = config
        self.namespace = namespace
        self.bare = bare
        """Servers named without prefix (`prefix: false`), as the registry names them."""
        self.denial = denial or _everyone
        """The policy hook (see `Denial`); everyone sees everything without one."""
        self.workflows = workflows
        """Whether any workflow exists (then think.workflows.list is listed too)."""
        self._catalog: Catalog | None = None
        self._names: dict[str, Names] = {}
        self._fits: dict[tuple[Rule, str | None], Fit] = {}
        """Chars of each tool's listed definition under a rule and mark, and their sum (what `auto` weighs and
        fills)."""
        self.index = SearchIndex()
        self._indexed: Catalog | None = None
        """The catalog `index` holds (built lazily, at the first search of a new catalog)."""
        self.settings = 0
        """Bumped by `reconfigure`: each session's rule is resolved again (its found tools stay)."""
        self.reloads = 0
        """Counted by `reconfigure`, changed section or not: what each session is shown is weighed again."""
        self.on_catalog: Callable[[Catalog], None] = lambda catalog: None
        """Told each new catalog this view follows (the composition root rewrites `initialize`'s instructions)."""

    def reconfigure(self, config: ExposureConfig) -> None:
        """A reload (its `exposure` section): sessions get their rule under it at their next request, and what each
        is shown is weighed again (the policy may have changed with it)."""
        self.reloads += 1
        if config != self.config:
            self.config, self._fits, self.settings = config, {}, self.settings + 1

    # -- rules and per-session state -----------------------------------------------------------

    def view(self, session: Session) -> View:
        state = session.data.get(STATE_KEY)
        client = session.client
        if not isinstance(state, View) or state.client != client or state.settings != self.settings:
            # First sight, the client's name arrived after a first call, or a reload.
            promoted = state.promoted if isinstance(state, View) else OrderedDict[str, None]()
            state = View(resolve(self.config, self.namespace.separator, client), client, promoted, self.settings)
            session.data[STATE_KEY] = state
        return state

    # -- derived from the catalog --------------------------------------------------------------

    def _follow(self, catalog: Catalog) -> None:
        if catalog is not self._catalog:
            self._catalog, self._names, self._fits = catalog, {}, {}
            self.on_catalog(catalog)

    def _searchable(self, catalog: Catalog) -> SearchIndex:
        """The index of `catalog`, built at its first search (a gateway nobody searches never loads the model)."""
        if self._indexed is not catalog:
            tools = [(e, e.item) for e in catalog.tools.values() if isinstance(e.item, types.Tool)]
            self.index.build([(e.exposed, e.server, t) for e, t in tools], [e.original for e, _t in tools])
            self._indexed = catalog
        return self.index

    def names(self, catalog: Catalog, separator: str) -> Names:
        self._follow(catalog)
        found = self._names.get(separator)
        if found is None:
            triples = ((e.server, e.original, e.exposed) for e in catalog.tools.values())
            own = apps.own_names(catalog.tools.values())  # an MCP App calls its server's tools by their own names
            found = self._names[separator] = Names(triples, separator, self.namespace.max_name_length, self.bare, own)
        return found

    def session_names(self, catalog: Catalog, session: Session) -> Names:
        return self.names(catalog, self.view(session).rule.separator)

    def pinned(self, entry: Entry) -> bool:
        ref = reference(entry.server, entry.original)
        return any(fnmatchcase(ref, glob) or fnmatchcase(entry.exposed, glob) for glob in self.config.pin)

    def base(self, entry: Entry, view: View | None = None) -> bool:
        """Listed in every mode: entry points, pins, and read_output once `view`'s session had a result spilled."""
        if entry.server in OWN_SERVERS:
            ref = reference(entry.server, entry.original)
            if ref in ENTRY_POINTS or (ref == WORKFLOWS_ENTRY and self.workflows()):
                return True
            if ref == READ_OUTPUT and view is not None and view.spilled:
                return True
        return self.pinned(entry)

    def spilled(self, catalog: Catalog, session: Session) -> bool:
        """Note that a result of `session` was spilled: read_output is listed from now on. Whether the session's list
        changed (then the client is told `list_changed`)."""
        view = self.view(session)
        if view.spilled:
            return False
        view.spilled = True
        return self.searching(catalog, view.rule, session.task_mark) or view.rule.native

    def visible(self, session: Session, entry: Entry) -> bool:
        return self.denial(session, entry) is None

    def listed(self, catalog: Catalog, session: Session, rule: Rule | None = None) -> list[types.Tool]:
        """The session's `tools/list` (under `rule`, default its own), in catalog order, under its names."""
        rule = rule or self.view(session).rule
        names = self.names(catalog, rule.separator)
        shown = self._shown(catalog, session, rule)
        view = self.view(session)
        listed = [
            as_listed(e, names, rule, session.task_mark, spilled=view.spilled, expansions=self._expansions)
            for n, e in catalog.tools.items()
            if n in shown and self.visible(session, e)
        ]
        read_output = names.to_session(names.by_original.get(("gateway", "read_output"), READ_OUTPUT))
        view.reads_output = any(t.name == read_output for t in listed)
        return listed

    def _expansions(self, entry: Entry) -> list[str]:
        """A listed tool's expansions, for its search hint."""
        return self.index.expansions.of(entry.server, entry.original, entry.exposed, entry.item.description or "")

    def rules(self) -> list[Rule]:
        """The default rule, then each client rule as it resolves (for `gateway tools`)."""
        sep = self.namespace.separator
        return [resolve(self.config, sep, None), *(resolve(self.config, sep, r.client) for r in self.config.clients)]

    def ways(self) -> list[tuple[str, Rule]]:
        """Which way each kind of client is listed, labelled (for `gateway tools` and the page's Catalog): clients
        that search natively, the others (the default rule), then each client rule."""
        sep, native = self.namespace.separator, self.config.native_search
        out = [(f"native search ({len(native)} clients)", native_rule(self.config, sep))] if native else []
        out.append(("default", resolve(self.config, sep, None)))
        return out + [(f"client {r.client}", resolve(self.config, sep, r.client)) for r in self.config.clients]

    def input_schema(self, catalog: Catalog, name: str) -> dict[str, Any] | None:
        """The input schema of the tool some client knows as `name`, under any rule's separator: the SDK checks a
        call's `Mcp-Param-*` headers against it before any session is known (None: no such name)."""
        for separator in dict.fromkeys(rule.separator for rule in self.rules()):  # the default's first
            canonical = self.names(catalog, separator).canonical.get(name)
            if canonical is not None:
                schema: dict[str, Any] = catalog.tools[canonical].item.input_schema  # type: ignore[union-attr]
                return schema
        return None

    def hidden(self, catalog: Catalog, session: Session, canonical: str) -> bool:
        if canonical not in catalog.tools:
            return False
        return canonical not in self._shown(catalog, session, self.view(session).rule)

    def promote(self, catalog: Catalog, session: Session, canonical: list[str]) -> bool:
        """Add found tools to the session's list (LRU, within max_tools); whether the list changed."""
        state = self.view(session)
        if not state.rule.promote or not self.searching(catalog, state.rule, session.task_mark):
            return False
        fresh = [n for n in canonical if n in catalog.tools and not self.base(catalog.tools[n])]
        before = list(state.promoted)
        for name in fresh:
            state.promoted[name] = None
            state.promoted.move_to_end(name)
        room = max(0, state.rule.max_tools - sum(1 for e in catalog.tools.values() if self.base(e)))
        while len(state.promoted) > room:
            state.promoted.popitem(last=False)
        return set(state.promoted) != set(before)

    def search(
        self, catalog: Catalog, session: Session, query: str, *, limit: int, server: str | None = None
    ) -> Matches:
        """find_tools over the whole catalog (listed and hidden) that this session may see.

        Raises:
            ValueError: the query is over the length limit.
        """
        entries = catalog.tools

        def allowed(name: str, _server: str) -> bool:
            return self.visible(session, entries[name])

        return self._searchable(catalog).search(query, limit=limit, server=server, visible=allowed)
