"""Config of `exposure`: what one client's `tools/list` holds, and the rules per client."""

from typing import Literal

from pydantic import Field

from gateway.config.base import ConfigModel

Mode = Literal["auto", "all", "search"]


class ClientRuleConfig(ConfigModel):
    client: str
    """Glob matched against the client's `clientInfo.name` (e.g. `claude-code*`, `*cursor*`); first match wins."""
    mode: Mode | None = None
    """This client's mode; unset: `exposure.mode`."""
    max_tools: int | None = Field(default=None, ge=1, le=10_000)
    """This client's tool budget; unset: `exposure.max_tools`."""
    max_list_chars: int | None = Field(default=None, ge=1_000)
    """This client's listing budget in characters; unset: `exposure.max_list_chars`."""
    separator: Literal[".", "_", "-", "__"] | None = None
    """Separator of this client's tool names (OpenAI-based clients reject dots: `_`); unset: `namespace.separator`."""
    description_chars: int | None = Field(default=None, ge=40)
    """Cap on listed descriptions for this client; unset: `exposure.description_chars`."""
    promote: bool | None = None
    """Whether tools this client finds join its list; unset: `exposure.promote`."""


class ExposureConfig(ConfigModel):
    mode: Mode = "auto"
    """`all` lists every tool; `search` lists the gateway's and Think's tools, pins and found tools (the rest
    stay callable by exact name and reachable through `gateway.find_tools`); `auto` lists all while the
    catalog fits `max_tools` and `max_list_chars`, else behaves as `search`."""
    max_tools: int = Field(default=40, ge=1, le=10_000)
    """Tool budget of a client's list (Cursor uses at most 40; VS Code and OpenAI-based clients 128)."""
    max_list_chars: int = Field(default=32_000, ge=1_000)
    """Listing budget: characters of the listed tool definitions' JSON."""
    pin: list[str] = []
    """Globs of exposed names (reference form `server.tool`) always listed, in every mode."""
    description_chars: int | None = Field(default=None, ge=40)
    """Cap on each listed description (cut with `…`); the full text stays available through `gateway.find_tools`."""
    promote: bool = True
    """Tools a session finds (or calls while hidden) join that session's list, at most `max_tools`, least
    recently used out first; the session is sent `notifications/tools/list_changed`."""
    clients: list[ClientRuleConfig] = []
    """Per-client rules by `clientInfo.name` glob, first match wins; a field left unset keeps the value above."""
