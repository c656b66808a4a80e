"""Config of `exposure`: what one client's `tools/list` holds, and the rules per client."""

from typing import Literal

from pydantic import Field

from gateway.config.base import ConfigModel

Mode = Literal["auto", "all", "search"]

NATIVE_SEARCH = (
    "claude-code",  # Claude Code (defers MCP tools behind its ToolSearch)
    "Visual Studio Code*",  # VS Code + Copilot: productService.nameLong, " - Insiders" too
    "Code - OSS",  # VS Code built from source
    "github-copilot-developer",  # Copilot CLI (github/copilot-cli#432)
    "copilot-cli",  # Copilot CLI 1.0.x
    "codex-mcp-client",  # Codex (tool_search per server)
    "cursor-vscode",  # Cursor
)
"""`clientInfo.name` globs of the clients that search tools themselves (DESIGN §14)."""


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
    native_search: bool | None = None
    """Whether this client searches tools itself (then, without `mode`, it is listed every tool with client hints);
    unset: whether its name matches `exposure.native_search`."""


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
    native_search: list[str] = list(NATIVE_SEARCH)
    """`clientInfo.name` globs of clients that search tools themselves: unless a client rule sets their `mode`, they
    are listed every tool (mode `all`), each with `_meta["anthropic/searchHint"]`, and what a session needs from its
    first turn with `_meta["anthropic/alwaysLoad"]`. Add a client with a rule `{client: NAME, native_search: true}`."""
    sampled_expansions: bool = False
    """On: ask the model of a client that offers MCP sampling (a handshake-era client declaring `sampling`) to write
    a few requests in users' words for each tool without an expansion pack, from the tool's name and description
    alone: in the background, a batch of tools per request, each tool once; cached in the store (DESIGN §14). Off by
    default: a request the person did not make costs their model's tokens and may show them an approval prompt, and
    a client answering sampling for its servers' calls would get the gateway's own requests among them."""
    clients: list[ClientRuleConfig] = []
    """Per-client rules by `clientInfo.name` glob, first match wins; a field left unset keeps the value above."""
