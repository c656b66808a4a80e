"""The try form of a tool: its fields from the input schema, the arguments read back as their types, and which
tools wait for a confirmation (MCP annotations)."""

import mcp.types as types
import pytest

from gateway.fronts.page import trying

SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "Where"},
        "depth": {"type": "integer", "default": 2},
        "ratio": {"type": "number"},
        "recursive": {"type": "boolean"},
        "mode": {"type": "string", "enum": ["fast", "slow"]},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["path"],
}


def tool(**notes: bool) -> types.Tool:
    annotations = types.ToolAnnotations(**notes) if notes else None
    return types.Tool(name="t", input_schema=SCHEMA, annotations=annotations)


def test_each_property_gets_the_field_its_type_wants() -> None:
    shown = {f["name"]: (f["widget"], f["required"], f["default"]) for f in trying.fields(tool())}
    assert shown == {
        "path": ("text", True, ""),
        "depth": ("number", False, "2"),
        "ratio": ("number", False, ""),
        "recursive": ("checkbox", False, ""),
        "mode": ("select", False, ""),
        "tags": ("json", False, ""),
    }


def test_the_form_reads_back_as_typed_arguments_leaving_out_empty_optional_fields() -> None:
    form = {"path": "/tmp", "depth": "3", "ratio": "", "recursive": "true", "mode": "slow", "tags": '["a"]'}
    assert trying.arguments(tool(), form) == {
        "path": "/tmp",
        "depth": 3,
        "recursive": True,
        "mode": "slow",
        "tags": ["a"],
    }
    with pytest.raises(trying.BadForm, match="Field 'depth' wants integer; 'deep' is not one"):
        trying.arguments(tool(), {"path": "/", "depth": "deep"})


def test_only_a_tool_that_says_it_is_read_only_goes_without_a_confirmation() -> None:
    assert trying.changes_state(tool()) and trying.destructive(tool())  # MCP's defaults: may change, may destroy
    assert not trying.changes_state(tool(read_only_hint=True))
    assert trying.changes_state(tool(destructive_hint=False)) and not trying.destructive(tool(destructive_hint=False))
