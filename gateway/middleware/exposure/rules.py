"""Which exposure settings hold for one client, and the per-session state they govern.

A rule is the `exposure` section's defaults with the first matching `clients` entry laid over them
(DESIGN §14); a session's `View` remembers the rule it resolved and the tools it found, so a reload or a
client name that arrives late re-resolves the rule without losing what the session promoted.
"""

from collections import OrderedDict
from collections.abc import Container
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from typing import Any

from gateway.config import ExposureConfig

STATE_KEY = "exposure"
"""Where a session keeps its `View` (`session.data`)."""
TELLS_LIMIT = ("claude-code*",)
"""`clientInfo.name` globs of clients that read `_meta["anthropic/maxResultSizeChars"]` on a listed tool (Claude
Code): the size guard adds it to each listed tool, and `auto` counts it (`Rule.told`)."""


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
    native: bool = False
    """The client searches tools itself: its listed tools carry client hints (`listed.hints`)."""
    told: bool = False
    """The client is told each tool's inline limit in `_meta` (TELLS_LIMIT): part of what its list costs."""


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
    spilled: bool = False
    """A result of this session was spilled: `gateway.read_output` is listed from now on (and loaded at once)."""
    reads_output: bool = False
    """Whether the session's last `tools/list` held `gateway.read_output` (else a spill notice names call_tool)."""
    shown: tuple[object, tuple[Any, ...], Container[str]] | None = None
    """The catalog, all else the weighing read, and the tools last weighed as listed (`Budget._shown`): weighed again
    when either changed."""


def searches_natively(config: ExposureConfig, client: str | None) -> bool:
    """Whether `client` is in the table of clients that search tools themselves (`exposure.native_search`)."""
    return client is not None and any(fnmatchcase(client, glob) for glob in config.native_search)


def native_rule(config: ExposureConfig, separator: str) -> Rule:
    """The rule of a client in the `native_search` table that no client rule names."""
    return replace(resolve(config, separator, None), mode="all", native=True)


def resolve(config: ExposureConfig, separator: str, client: str | None) -> Rule:
    """The first client rule whose glob matches `client` over the defaults; no match: the defaults. A client that
    searches natively is listed everything (`all`, with hints) unless its rule sets a mode: a rule wins either way."""
    c = config
    native = searches_natively(c, client)
    told = client is not None and any(fnmatchcase(client, glob) for glob in TELLS_LIMIT)
    for rule in c.clients:
        if client is not None and fnmatchcase(client, rule.client):
            native = native if rule.native_search is None else rule.native_search
            return Rule(
                rule.mode or ("all" if native else c.mode),
                rule.max_tools or c.max_tools,
                rule.max_list_chars or c.max_list_chars,
                rule.separator or separator,
                rule.description_chars or c.description_chars,
                c.promote if rule.promote is None else rule.promote,
                rule.client,
                native,
                told,
            )
    mode = "all" if native else c.mode
    return Rule(mode, c.max_tools, c.max_list_chars, separator, c.description_chars, c.promote, None, native, told)
