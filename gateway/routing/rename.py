"""Session names: the catalog under one separator, and the gateway's own text rendered in those names.

The gateway's own text (hints, spill notices, the driver prompt, Think instructions, workflow `call`s, the
descriptions of its own tools) names tools by their *reference* name `<server>.<tool>`: the original tool
name after the namespace and a dot. A client sees *exposed* names, which depend on the separator in force
for its session (`namespace.separator` or a client rule's) and on shortening. `Names` maps between the
three (reference, canonical = the registry's, session) and rewrites text from reference to session names, and
resolves the names an MCP App calls its own server's tools by (`gateway.routing.apps.own_names`).
"""

import re
from collections.abc import Iterable, Mapping
from typing import Any

from gateway.routing import names

PLACEHOLDER = "<server>.<tool>"
"""How the driver prompt spells the naming rule; rendered with the session's separator too."""


def reference(server: str, original: str) -> str:
    return f"{server}.{original}"


class Names:
    """One separator's names for one catalog: (server, original, canonical) triples in, lookups out."""

    def __init__(
        self,
        entries: Iterable[tuple[str, str, str]],
        separator: str,
        max_length: int,
        bare: frozenset[str] = frozenset(),
        apps: Mapping[str, str] | None = None,
    ) -> None:
        triples = list(entries)
        assigned = names.assign(((s, o) for s, o, _c in triples), separator, max_length, bare)
        self.separator = separator
        self.session = {canonical: assigned[s, o] for s, o, canonical in triples}
        """canonical name -> this session's name."""
        self.canonical = {assigned[s, o]: canonical for s, o, canonical in triples}
        """this session's name -> canonical name."""
        self.by_original = {(s, o): canonical for s, o, canonical in triples}
        """(server, original) -> canonical name."""
        self.references = {reference(s, o): canonical for s, o, canonical in triples}
        """reference name -> canonical name."""
        self.apps = apps or {}
        """An app's own name of a tool of its server -> canonical name."""
        renamed = {reference(s, o): assigned[s, o] for s, o, _c in triples if reference(s, o) != assigned[s, o]}
        if separator != ".":
            renamed[PLACEHOLDER] = f"<server>{separator}<tool>"
        self._renamed = renamed
        self._pattern = (
            re.compile(
                r"(?<![A-Za-z0-9_.\-/])("
                + "|".join(re.escape(r) for r in sorted(renamed, key=len, reverse=True))
                + r")(?![A-Za-z0-9_\-])"
            )
            if renamed
            else None
        )

    @property
    def identity(self) -> bool:
        """Whether the gateway's text needs no rewriting for this session."""
        return self._pattern is None

    def to_session(self, canonical: str) -> str:
        return self.session.get(canonical, canonical)

    def resolve(self, name: str) -> str:
        """The canonical name a client's name stands for: its session name, a reference name, or an app's own name
        of a tool of its server; else itself."""
        return self.canonical.get(name) or self.references.get(name) or self.apps.get(name) or name

    def text(self, text: str) -> str:
        """`text` with every reference name replaced by this session's name (unchanged when they coincide)."""
        if self._pattern is None:
            return text
        return self._pattern.sub(lambda m: self._renamed[m.group(1)], text)

    def deep(self, value: Any) -> Any:
        """`text()` applied to every string in a JSON value (Think instructions carry names in fields)."""
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.deep(v) for v in value]
        if isinstance(value, dict):
            return {k: self.deep(v) for k, v in value.items()}
        return value
