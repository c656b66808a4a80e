"""MCP Apps relayed (extension `io.modelcontextprotocol/ui`, SEP-1865): a tool's UI resource and its app's calls.

A tool names the HTML it is rendered with in `_meta.ui.resourceUri` (and in the deprecated flat
`_meta["ui/resourceUri"]`, which the extension's own `registerAppTool` still writes beside it); a host reads that
URI with `resources/read` on the connection it listed the tool from: the gateway. So both forms are rewritten to
the URI the gateway exposes the resource under (`Uris.exposed`: `ui://<server>+…`), in listings and in tool
results alike; everything else under `_meta` (`ui.visibility`, `ui.csp`, `ui.permissions`, `ui.domain`,
`ui.prefersBorder`, other keys) passes as the server sent it, as does the resource's `text/html;profile=mcp-app`.

The app itself, running in the host's iframe, calls its server's tools by the names its code was written with
(`callServerTool({name: "poll-system-stats"})`), which the host forwards to the gateway as they are. Those own
names are resolved here (`own_names`) for the servers that serve Apps: a server's tools an app may call
(`visibility` with `"app"`, the default) answer to their own name wherever no other tool has that name as its
exposed name and no other Apps server has a tool of that name. Visibility itself is the host's to enforce (it
alone knows whether the model or an app is calling); the gateway lists every tool with its `visibility` as sent.
"""

from collections.abc import Iterable
from typing import Any, TypeVar

import mcp.types as types

from gateway.routing.catalog import Entry
from gateway.routing.uris import Uris

UI = "ui"
FLAT = "ui/resourceUri"
"""The deprecated flat form of `_meta.ui.resourceUri` ("will be removed before GA"), still written by servers."""
Carrier = TypeVar("Carrier", types.Tool, types.CallToolResult)


def exposed_meta(server: str, meta: dict[str, Any] | None, uris: Uris) -> dict[str, Any] | None:
    """`meta` with its UI resource URI, in both forms, as the client reaches it; the same object when it has none."""
    if not meta:
        return meta
    out = meta
    ui = meta.get(UI)
    if isinstance(ui, dict) and isinstance(ui.get("resourceUri"), str):
        out = {**out, UI: {**ui, "resourceUri": uris.exposed(server, ui["resourceUri"])}}
    flat = meta.get(FLAT)
    if isinstance(flat, str):
        out = {**out, FLAT: uris.exposed(server, flat)}
    return out


def exposed(server: str, carrier: Carrier, uris: Uris) -> Carrier:
    """A tool (as listed) or a tool result of `server` with its UI resource URI as the client reaches it."""
    meta = exposed_meta(server, carrier.meta, uris)
    return carrier if meta is carrier.meta else carrier.model_copy(update={"meta": meta})


def _ui(tool: types.Tool | types.Prompt) -> dict[str, Any] | None:
    meta = tool.meta or {}
    ui = meta.get(UI)
    if isinstance(ui, dict):
        return ui
    return {} if isinstance(meta.get(FLAT), str) else None


def app_callable(tool: types.Tool | types.Prompt) -> bool:
    """Whether an app may call `tool`: its `visibility` includes `"app"` (it does when absent, the default)."""
    visibility = (_ui(tool) or {}).get("visibility")
    return not isinstance(visibility, list) or "app" in visibility


def own_names(entries: Iterable[Entry]) -> dict[str, str]:
    """Own name -> exposed (canonical) name, for the tools an app may call on the servers that serve Apps (any tool
    with `_meta.ui`); a name two Apps servers share, or that is some tool's exposed name, answers to neither."""
    listed = list(entries)
    apps_servers = {e.server for e in listed if _ui(e.item) is not None}
    taken = {e.exposed for e in listed}
    found: dict[str, str] = {}
    shared: set[str] = set()
    for entry in listed:
        if entry.server not in apps_servers or not app_callable(entry.item) or entry.original in taken:
            continue
        if entry.original in found:
            shared.add(entry.original)
        found[entry.original] = entry.exposed
    return {name: exposed for name, exposed in found.items() if name not in shared}
