"""What the gateway offers, merged from every server: the catalog's shape, shared by all who read it.

The registry builds a `Catalog` (and a new object whenever a server's list changes, so readers can cache
what they derive per catalog object); listing, search, policy and Think read it without depending on how
it is built or on the servers behind it.
"""

from dataclasses import dataclass, field

import mcp.types as types


@dataclass(frozen=True, slots=True)
class Entry:
    """One tool or prompt as exposed: its exposed (canonical) name, the server that owns it, its name there."""

    exposed: str
    server: str
    original: str
    item: types.Tool | types.Prompt


@dataclass(slots=True)
class Catalog:
    tools: dict[str, Entry] = field(default_factory=dict[str, Entry])
    prompts: dict[str, Entry] = field(default_factory=dict[str, Entry])
    resources: list[types.Resource] = field(default_factory=list[types.Resource])
    resource_templates: list[types.ResourceTemplate] = field(default_factory=list[types.ResourceTemplate])
    unlisted: dict[str, str] = field(default_factory=dict[str, str])
    """Servers that have listed no tools yet (down since the start, or starting): the prefix of their tools'
    names -> the server, so a call to one is told the server is not up rather than that the tool is unknown."""

    def unlisted_owner(self, name: str) -> str | None:
        """The server not yet listed whose tools' names `name` has the prefix of (None: no such server)."""
        owners = [server for prefix, server in self.unlisted.items() if name.startswith(prefix)]
        return max(owners, key=len, default=None)
