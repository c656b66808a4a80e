"""Try a tool from the page: a form built from the tool's input schema, and the arguments read back from it.

The call itself goes through the whole pipeline as the viewer (policy, exposure, hints, size guard, audit,
record), as a session of the viewer's whose client is named `CLIENT`, so it is refused, audited and listed in
Calls like any call. A tool that may change state (MCP annotations: not `readOnlyHint`) waits for a confirmation.
"""

import json
from typing import Any

import mcp.types as types

CLIENT = "gateway page"
"""The client name a call tried from the page is recorded under."""
MAX_FIELDS = 40


def changes_state(tool: types.Tool) -> bool:
    """Whether calling the tool may change something (MCP: `readOnlyHint` defaults to false)."""
    notes = tool.annotations
    return notes is None or notes.read_only_hint is not True


def destructive(tool: types.Tool) -> bool:
    notes = tool.annotations
    return changes_state(tool) and (notes is None or notes.destructive_hint is not False)


def fields(tool: types.Tool) -> list[dict[str, Any]]:
    """One form field per top-level property of the input schema (a nested object or array: JSON in a text
    area), in the schema's order, required ones first-class; the rest of the schema is the server's to check."""
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    required = set(schema.get("required") or [])
    found = schema.get("properties")
    properties: dict[str, Any] = found if isinstance(found, dict) else {}
    shown = []
    for name, spec in list(properties.items())[:MAX_FIELDS]:
        spec = spec if isinstance(spec, dict) else {}
        typed = spec.get("type")
        kind: str = typed if isinstance(typed, str) else "json"
        enum = spec.get("enum") if isinstance(spec.get("enum"), list) else None
        widget = "select" if enum else {"string": "text", "integer": "number", "number": "number"}.get(kind, "json")
        if kind == "boolean":
            widget = "checkbox"
        shown.append(
            {
                "name": name,
                "type": kind,
                "widget": widget,
                "options": [json.dumps(v) if not isinstance(v, str) else v for v in enum or []],
                "required": name in required,
                "description": str(spec.get("description") or ""),
                "default": "" if "default" not in spec else _as_text(spec["default"]),
                "step": "1" if kind == "integer" else "any",
            }
        )
    return shown


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


class BadForm(ValueError):
    """A field the form sent cannot be read as its schema type: said with the field and the value."""


def arguments(tool: types.Tool, form: dict[str, str]) -> dict[str, Any]:
    """The call's arguments from the submitted form: empty optional fields left out, each value as its type."""
    found: dict[str, Any] = {}
    for field in fields(tool):
        name, raw = field["name"], form.get(field["name"], "")
        if field["widget"] == "checkbox":
            if raw or field["required"]:
                found[name] = bool(raw)
            continue
        if raw == "" and not field["required"]:
            continue
        found[name] = _read(field, raw)
    return found


def _read(field: dict[str, Any], raw: str) -> Any:
    kind = field["type"]
    try:
        if kind == "integer":
            return int(raw)
        if kind == "number":
            return float(raw)
        if kind == "string":
            return raw
        return json.loads(raw)  # arrays, objects, untyped, and enums of other than strings
    except ValueError:
        shown = raw if len(raw) <= 80 else raw[:80] + "…"
        raise BadForm(
            f"Field {field['name']!r} wants {kind}; {shown!r} is not one. Correct it and try again."
        ) from None
