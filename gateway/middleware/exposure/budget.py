"""The budget `auto` weighs and fills (DESIGN §14): what each tool's listed definition costs under a rule, whether
a rule lists a subset (search mode, or `auto` over `max_tools`/`max_list_chars`), and which tools a session is
shown: the way in and found tools, then in `auto` as many more as fit, the most used first. `Exposure` (`view.py`)
mixes it in; the derived sizes are its, rebuilt with each new catalog.
"""

from collections.abc import Callable, Container
from typing import NamedTuple, Protocol

import mcp.types as types

from gateway.middleware.exposure.listed import OWN_SERVERS, as_listed, definition_chars
from gateway.middleware.exposure.rules import Rule, View
from gateway.routing.catalog import Catalog, Entry
from gateway.routing.rename import Names
from gateway.session import Session


class Fit(NamedTuple):
    """What listing a catalog under one rule and mark costs: each tool's chars (canonical name -> chars of its listed
    definition, in catalog order) and their count and sum, summed once: `auto` weighs them on every call."""

    costs: dict[str, int]
    tools: int
    chars: int


class _Host(Protocol):
    """What the budget reads of the `Exposure` it is mixed into."""

    _fits: dict[tuple[Rule, str | None], Fit]
    reloads: int
    workflows: Callable[[], bool]

    def _follow(self, catalog: Catalog) -> None: ...
    def names(self, catalog: Catalog, separator: str) -> Names: ...
    def view(self, session: Session) -> View: ...
    def base(self, entry: Entry, view: View | None = None) -> bool: ...
    def visible(self, session: Session, entry: Entry) -> bool: ...
    def fit(self, catalog: Catalog, rule: Rule, mark: types.ToolExecution | None = None) -> Fit: ...
    def costs(self, catalog: Catalog, rule: Rule, mark: types.ToolExecution | None = None) -> dict[str, int]: ...
    def full_size(self, catalog: Catalog, rule: Rule, mark: types.ToolExecution | None = None) -> tuple[int, int]: ...
    def searching(self, catalog: Catalog, rule: Rule, mark: types.ToolExecution | None = None) -> bool: ...


class Budget:
    """`Exposure`'s sizes and fill (see the module docstring)."""

    def fit(self: "_Host", catalog: Catalog, rule: Rule, mark: types.ToolExecution | None = None) -> Fit:
        """The `Fit` of listing `catalog` under `rule` with `mark` (policy aside); measured once per catalog, rule
        and mark."""
        self._follow(catalog)
        key = (rule, None if mark is None else mark.task_support)
        fit = self._fits.get(key)
        if fit is None:
            names = self.names(catalog, rule.separator)
            costs = {n: definition_chars(as_listed(e, names, rule, mark), rule) for n, e in catalog.tools.items()}
            fit = self._fits[key] = Fit(costs, len(costs), sum(costs.values()))
        return fit

    def costs(self: "_Host", catalog: Catalog, rule: Rule, mark: types.ToolExecution | None = None) -> dict[str, int]:
        """Canonical name -> chars of its definition listed under `rule` with `mark` (policy aside), in catalog
        order."""
        return self.fit(catalog, rule, mark).costs

    def full_size(
        self: "_Host", catalog: Catalog, rule: Rule, mark: types.ToolExecution | None = None
    ) -> tuple[int, int]:
        """(tools, chars) of listing everything under `rule` with `mark` (policy aside): what `auto` weighs."""
        fit = self.fit(catalog, rule, mark)
        return fit.tools, fit.chars

    def fills(self: "_Host", catalog: Catalog, session: Session) -> bool:
        """Whether the session's list is `auto` over budget: filled, by usage first."""
        rule = self.view(session).rule
        return rule.mode == "auto" and self.searching(catalog, rule, session.task_mark)

    def searching(self: "_Host", catalog: Catalog, rule: Rule, mark: types.ToolExecution | None = None) -> bool:
        """Whether `rule` lists a subset (search mode, or auto over budget); `mark` as for `full_size`."""
        if rule.mode != "auto":
            return rule.mode == "search"
        fit = self.fit(catalog, rule, mark)
        return fit.tools > rule.max_tools or fit.chars > rule.max_list_chars

    def _shown(self: "_Host", catalog: Catalog, session: Session, rule: Rule) -> Container[str]:
        """Canonical names listed: all, or the way in, pins and found tools, and in `auto` as many more as fit."""
        if not self.searching(catalog, rule, session.task_mark):
            return catalog.tools
        view = self.view(session)
        # Every call asks (`hidden`): weighed again only when something it reads changed. A reload may change the
        # policy (`visible`); the catalog is compared by identity.
        read = (rule, session.task_mark, view.spilled, self.workflows(), self.reloads, (*view.promoted,), (*view.used,))
        if view.shown is not None and view.shown[0] is catalog and view.shown[1] == read:
            return view.shown[2]
        shown = {n for n, e in catalog.tools.items() if self.base(e, view) or n in view.promoted}
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
        view.shown = (catalog, read, shown)
        return shown
