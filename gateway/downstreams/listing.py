"""A server's listing read entry by entry: one bad entry is repaired or skipped, never the whole page.

Validating a `tools/list` page as one `ListToolsResult` fails the page for a single tool without an
`inputSchema`, and the server then looks like it has no tools at all ("up, 0 tools", no reason). Here
each entry is validated on its own; a tool whose input schema is missing or not an object schema is
listed with an open object schema (arguments are always an object in MCP, so it stays callable), any
other invalid entry is left out, and every decision is named for `gateway.status` and the log.
"""

from typing import Any

import mcp.types as types
from pydantic import BaseModel, ValidationError

ITEM_TYPES: dict[str, type[BaseModel]] = {
    "tools": types.Tool,
    "resources": types.Resource,
    "resource_templates": types.ResourceTemplate,
    "prompts": types.Prompt,
}
WIRE_FIELDS = {
    "tools": "tools",
    "resources": "resources",
    "resource_templates": "resourceTemplates",
    "prompts": "prompts",
}
OPEN_OBJECT: dict[str, Any] = {"type": "object", "additionalProperties": True}


def read_page(kind: str, page: dict[str, Any]) -> tuple[list[Any], list[str], str | None]:
    """The valid entries of one listing page, the problems found (one sentence each), and the next cursor."""
    raw_items = page.get(WIRE_FIELDS[kind])
    if not isinstance(raw_items, list):
        return [], [f"the {kind} listing has no list of {kind} ({type(raw_items).__name__}); nothing listed"], None
    items: list[Any] = []
    problems: list[str] = []
    for raw in raw_items:
        item, problem = _read_item(kind, raw)
        if item is not None:
            items.append(item)
        if problem is not None:
            problems.append(problem)
    cursor = page.get("nextCursor")
    return items, problems, cursor if isinstance(cursor, str) and cursor else None


def _read_item(kind: str, raw: Any) -> tuple[Any | None, str | None]:
    name = raw.get("name") if isinstance(raw, dict) else None
    label = f"{kind[:-1].replace('_', ' ')} {name!r}" if isinstance(name, str) else f"a {kind[:-1]} entry"
    repaired: str | None = None
    if kind == "tools" and isinstance(raw, dict):
        schema = raw.get("inputSchema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            what = "no inputSchema" if schema is None else f"inputSchema {_short(schema)} is not an object schema"
            repaired = f"{label}: {what}; listed with an open object schema (any arguments)"
            raw = {**raw, "inputSchema": OPEN_OBJECT}
    try:
        return ITEM_TYPES[kind].model_validate(raw), repaired
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "entry"
        return None, f"{label}: left out, {where}: {first['msg']} (+{exc.error_count() - 1} more)"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
