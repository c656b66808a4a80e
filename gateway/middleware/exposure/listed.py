"""How one tool reads in a session's `tools/list`, and what that costs the client's window.

A listed tool carries the session's name for it and a description within the rule's cap; the gateway's own
tools also drop schema keywords only their server needs and speak of tools in the session's names. The
size of that definition, in characters of JSON, is what `auto` weighs and fills.
"""

from typing import Any, cast

import mcp.types as types

from gateway.middleware.exposure.rules import Rule
from gateway.routing.catalog import Entry
from gateway.routing.rename import Names

OWN_SERVERS = frozenset({"gateway", "think", "prompt"})
"""In-process servers: the gateway's and Think's own tools."""
ENTRY_POINTS = frozenset({"gateway.find_tools", "gateway.call_tool", "think.plan", "think.next"})
"""The own tools a client needs to start, listed in every mode (DESIGN §14): the rest (status, read_output,
think.explain, …) would take 5,000 chars of every client's window that most never use; the driver prompt
says how to reach them."""
WORKFLOWS_ENTRY = "think.workflows.list"
"""Listed with ENTRY_POINTS only while there are workflows to list."""
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


def as_listed(entry: Entry, names: Names, rule: Rule, mark: types.ToolExecution | None) -> types.Tool:
    """A tool as listed under `rule`; a downstream's carries `mark` (`Session.task_mark`), the gateway's own
    (answered at once, in process) none."""
    tool = cast(types.Tool, entry.item)  # catalog.tools holds tools
    update: dict[str, Any] = {"name": names.to_session(entry.exposed)}
    description = tool.description or ""
    if entry.server in OWN_SERVERS:
        description = names.text(description)
        update["input_schema"] = slim(tool.input_schema)
    elif mark is not None:
        update["execution"] = mark
    cap = rule.description_chars
    if cap is not None and len(description) > cap:
        description = description[: cap - 1].rstrip() + "…"
    if description != (tool.description or ""):
        update["description"] = description
    return tool.model_copy(update=update)
