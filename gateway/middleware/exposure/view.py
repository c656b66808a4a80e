"""Exposure: what one session's `tools/list` holds (DESIGN §14). It lives beside the session, not in the registry.

The catalog is everything aggregated; a session sees, per its client rule:

* `all`: every tool the policy lets it see;
* `search`: the way in (ENTRY_POINTS: find/call and Think's entry points), `pin` globs, and the tools it
  found or called (promoted, LRU); every other tool, the gateway's own included, stays callable by its exact
  name and reachable through `gateway.find_tools`;
* `auto`: `all` while the catalog fits `max_tools` and `max_list_chars` (JSON of the listed definitions), else
  `search` filled up to both limits with more catalog tools: the identity's most used first (`usage.py`),
  then catalog order. One tool over is no cliff.

Names are rendered per session (`rename.Names`), descriptions capped by `description_chars`. Derived data
(names per separator, the search index, sizes) is rebuilt when the registry hands out a new catalog object.
"""

from collections import OrderedDict
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, cast

import mcp.types as types

from gateway.config import ExposureConfig, NamespaceConfig
from gateway.errors import GatewayError
from gateway.middleware.exposure.search import Matches, SearchIndex
from gateway.routing.registry import Catalog, Entry
from gateway.routing.rename import Names, reference
from gateway.session import Session

OWN_SERVERS = frozenset({"gateway", "think", "prompt"})
"""In-process servers: the gateway's and Think's own tools."""
ENTRY_POINTS = frozenset({"gateway.find_tools", "gateway.call_tool", "think.plan", "think.next"})
"""The own tools a client needs to start, listed in every mode (DESIGN §14): the rest (status, read_output,
think.explain, …) would take 5,000 chars of every client's window that most never use; the driver prompt
says how to reach them."""
WORKFLOWS_ENTRY = "think.workflows.list"
"""Listed with ENTRY_POINTS only while there are workflows to list."""
STATE_KEY = "exposure"

Denial = Callable[[Session, Entry], GatewayError | None]
"""The policy hook: why this session may not see (list, find) nor call this tool (None: it may). Listing, search,
the suggestions of an unknown name and every call ask it: the one place the policy meets tools."""


def _everyone(session: Session, entry: Entry) -> GatewayError | None:
    return None


@dataclass(frozen=True, slots=True)
class Rule:
    """The settings in force for one client (its rule's fields over the defaults)."""

    mode: str
    max_tools: int
    max_list_chars: int
    separator: str
    description_chars: int | None
    promote: bool
    client_glob: str | None = None


@dataclass(slots=True)
class View:
    """Per-session exposure state, kept in `session.data[STATE_KEY]`."""

    rule: Rule
    client: str | None
    promoted: OrderedDict[str, None] = field(default_factory=OrderedDict[str, None])
    """Canonical names of found tools, least recently used first."""
    settings: int = 0
    """The `Exposure.settings` generation `rule` was resolved under (a reload may change the rules)."""
    used: list[str] = field(default_factory=list[str])
    """The identity's most called tools, most first, as read at its last `tools/list` (auto's fill order)."""


CHECK_ONLY = frozenset({"pattern", "minLength", "maxLength"})
"""Schema keywords of the own tools that only the server needs: it checks them and names a failing value."""


def slim(schema: Any) -> Any:
    """An input schema without CHECK_ONLY keywords nor a default `additionalProperties` (an own tool's listed copy)."""
    if not isinstance(schema, dict):
        return schema
    # `additionalProperties: true` is JSON Schema's default: dropping it changes nothing but the size.
    out = {k: v for k, v in schema.items() if k not in CHECK_ONLY and not (k == "additionalProperties" and v is True)}
    if isinstance(out.get("properties"), dict):
        out["properties"] = {name: slim(sub) for name, sub in out["properties"].items()}
    if "items" in out:
        out["items"] = slim(out["items"])
    return out


def definition_chars(tool: types.Tool) -> int:
    """What a listed tool costs the client's window: the characters of its JSON definition."""
    return len(tool.model_dump_json(by_alias=True, exclude_none=True))


class Exposure:
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
        self._fits: dict[tuple[Rule, str | None], dict[str, int]] = {}
        """Chars of each tool's listed definition under a rule, in catalog order (what `auto` weighs and fills)."""
        self.index = SearchIndex()
        self.settings = 0
        """Bumped by `reconfigure`: each session's rule is resolved again (its found tools stay)."""

    def reconfigure(self, config: ExposureConfig) -> None:
        """A reloaded `exposure` section: sessions get their rule under it at their next request."""
        if config != self.config:
            self.config, self._fits, self.settings = config, {}, self.settings + 1

    # -- rules and per-session state -----------------------------------------------------------

    def rule_for(self, client: str | None) -> Rule:
        """The first client rule whose glob matches `client` over the defaults; no match: the defaults."""
        c, sep = self.config, self.namespace.separator
        for rule in c.clients:
            if client is not None and fnmatchcase(client, rule.client):
                return Rule(
                    rule.mode or c.mode,
                    rule.max_tools or c.max_tools,
                    rule.max_list_chars or c.max_list_chars,
                    rule.separator or sep,
                    rule.description_chars or c.description_chars,
                    c.promote if rule.promote is None else rule.promote,
                    rule.client,
                )
        return Rule(c.mode, c.max_tools, c.max_list_chars, sep, c.description_chars, c.promote)

    def view(self, session: Session) -> View:
        state = session.data.get(STATE_KEY)
        client = session.client
        if not isinstance(state, View) or state.client != client or state.settings != self.settings:
            # First sight, the client's name arrived after a first call, or a reload.
            promoted = state.promoted if isinstance(state, View) else OrderedDict[str, None]()
            state = View(self.rule_for(client), client, promoted, self.settings)
            session.data[STATE_KEY] = state
        return state

    # -- derived from the catalog --------------------------------------------------------------

    def _follow(self, catalog: Catalog) -> None:
        if catalog is not self._catalog:
            self._catalog, self._names, self._fits = catalog, {}, {}
            self.index.build(
                (e.exposed, e.server, e.item) for e in catalog.tools.values() if isinstance(e.item, types.Tool)
            )

    def names(self, catalog: Catalog, separator: str) -> Names:
        self._follow(catalog)
        found = self._names.get(separator)
        if found is None:
            triples = ((e.server, e.original, e.exposed) for e in catalog.tools.values())
            found = self._names[separator] = Names(triples, separator, self.namespace.max_name_length, self.bare)
        return found

    def session_names(self, catalog: Catalog, session: Session) -> Names:
        return self.names(catalog, self.view(session).rule.separator)

    def _present(self, entry: Entry, names: Names, rule: Rule) -> types.Tool:
        tool = cast(types.Tool, entry.item)  # catalog.tools holds tools
        update: dict[str, Any] = {"name": names.to_session(entry.exposed)}
        description = tool.description or ""
        if entry.server in OWN_SERVERS:
            description = names.text(description)
            update["input_schema"] = slim(tool.input_schema)
        cap = rule.description_chars
        if cap is not None and len(description) > cap:
            description = description[: cap - 1].rstrip() + "…"
        if description != (tool.description or ""):
            update["description"] = description
        return tool.model_copy(update=update)

    def _listed(self, entry: Entry, names: Names, rule: Rule, mark: types.ToolExecution | None) -> types.Tool:
        """A tool as listed under `rule`; a downstream's carries `mark` (`Session.task_mark`), the gateway's own
        (answered at once, in process) none."""
        tool = self._present(entry, names, rule)
        return tool if mark is None or entry.server in OWN_SERVERS else tool.model_copy(update={"execution": mark})

    def costs(self, catalog: Catalog, rule: Rule, mark: types.ToolExecution | None = None) -> dict[str, int]:
        """Canonical name -> chars of its definition listed under `rule` with `mark` (policy aside), in catalog
        order; measured once per catalog, rule and mark."""
        self._follow(catalog)
        key = (rule, None if mark is None else mark.task_support)
        costs = self._fits.get(key)
        if costs is None:
            names = self.names(catalog, rule.separator)
            costs = {n: definition_chars(self._listed(e, names, rule, mark)) for n, e in catalog.tools.items()}
            self._fits[key] = costs
        return costs

    def full_size(self, catalog: Catalog, rule: Rule, mark: types.ToolExecution | None = None) -> tuple[int, int]:
        """(tools, chars) of listing everything under `rule` with `mark` (policy aside): what `auto` weighs."""
        costs = self.costs(catalog, rule, mark)
        return len(costs), sum(costs.values())

    def fills(self, catalog: Catalog, session: Session) -> bool:
        """Whether the session's list is `auto` over budget: filled, by usage first."""
        rule = self.view(session).rule
        return rule.mode == "auto" and self.searching(catalog, rule, session.task_mark)

    def searching(self, catalog: Catalog, rule: Rule, mark: types.ToolExecution | None = None) -> bool:
        """Whether `rule` lists a subset (search mode, or auto over budget); `mark` as for `full_size`."""
        if rule.mode != "auto":
            return rule.mode == "search"
        tools, chars = self.full_size(catalog, rule, mark)
        return tools > rule.max_tools or chars > rule.max_list_chars

    def pinned(self, entry: Entry) -> bool:
        ref = reference(entry.server, entry.original)
        return any(fnmatchcase(ref, glob) or fnmatchcase(entry.exposed, glob) for glob in self.config.pin)

    def base(self, entry: Entry) -> bool:
        """Listed in every mode: the entry points and pins."""
        if entry.server in OWN_SERVERS:
            ref = reference(entry.server, entry.original)
            if ref in ENTRY_POINTS or (ref == WORKFLOWS_ENTRY and self.workflows()):
                return True
        return self.pinned(entry)

    def visible(self, session: Session, entry: Entry) -> bool:
        return self.denial(session, entry) is None

    def listed(self, catalog: Catalog, session: Session, rule: Rule | None = None) -> list[types.Tool]:
        """The session's `tools/list` (under `rule`, default its own), in catalog order, under its names."""
        rule = rule or self.view(session).rule
        names = self.names(catalog, rule.separator)
        shown = self._shown(catalog, session, rule)
        return [
            self._listed(e, names, rule, session.task_mark)
            for n, e in catalog.tools.items()
            if n in shown and self.visible(session, e)
        ]

    def _shown(self, catalog: Catalog, session: Session, rule: Rule) -> Container[str]:
        """Canonical names listed: all, or the way in, pins and found tools, and in `auto` as many more as fit."""
        if not self.searching(catalog, rule, session.task_mark):
            return catalog.tools
        view = self.view(session)
        shown = {n for n, e in catalog.tools.items() if self.base(e) or n in view.promoted}
        if rule.mode == "auto":
            # No cliff: over budget, `auto` still lists what fits, the way in counted first, then the most used.
            costs = self.costs(catalog, rule, session.task_mark)
            chars = sum(costs[n] for n in shown)
            for name in (*(n for n in view.used if n in costs), *costs):
                if len(shown) >= rule.max_tools:
                    break
                entry, cost = catalog.tools[name], costs[name]
                if name in shown or entry.server in OWN_SERVERS or chars + cost > rule.max_list_chars:
                    continue
                if self.visible(session, entry):
                    shown.add(name)
                    chars += cost
        return shown

    def rules(self) -> list[Rule]:
        """The default rule, then each client rule as it resolves (for `gateway tools`)."""
        return [self.rule_for(None), *(self.rule_for(r.client) for r in self.config.clients)]

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
        self._follow(catalog)
        entries = catalog.tools

        def allowed(name: str, _server: str) -> bool:
            return self.visible(session, entries[name])

        return self.index.search(query, limit=limit, server=server, visible=allowed)
