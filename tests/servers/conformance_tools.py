"""The conformance fixture's tools: names, schemas and fixed results as the suite asks for them, plus the
gateway's own test tools, and how the interactive ones render what the client answered."""

import json
from typing import Any

import mcp.types as types

from tests.servers.conformance_content import AUDIO, IMAGE, embedded, text

NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}
SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}
DEFAULTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}
_OPTIONS = ["option1", "option2", "option3"]
ENUMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "description": "Select one option", "enum": _OPTIONS},
        "titledSingle": {
            "type": "string",
            "description": "Select one option with titles",
            "oneOf": [{"const": f"value{i}", "title": t} for i, t in ((1, "First Option"), (2, "Second Option"))]
            + [{"const": "value3", "title": "Third Option"}],
        },
        "legacyEnum": {
            "type": "string",
            "description": "Select one option (legacy)",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "description": "Select multiple options",
            "minItems": 1,
            "maxItems": 3,
            "items": {"type": "string", "enum": _OPTIONS},
        },
        "titledMulti": {
            "type": "array",
            "description": "Select multiple options with titles",
            "minItems": 1,
            "maxItems": 3,
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
    "required": [],
}
# tool -> (message, requested schema) for the elicitation fixtures; the message of test_elicitation is an argument.
ELICITATIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "test_elicitation": (
        "",
        {
            "type": "object",
            "properties": {"response": {"type": "string", "description": "User's response"}},
            "required": ["response"],
        },
    ),
    "test_elicitation_sep1034_defaults": ("Please review and update the form fields with defaults", DEFAULTS_SCHEMA),
    "test_elicitation_sep1330_enums": ("Please select options from the enum fields", ENUMS_SCHEMA),
}


def tool(name: str, description: str, schema: dict[str, Any] = NO_ARGS) -> types.Tool:
    return types.Tool(name=name, description=description, input_schema=schema)


def string_args(**descriptions: str) -> dict[str, Any]:
    props = {k: {"type": "string", "description": v} for k, v in descriptions.items()}
    return {"type": "object", "properties": props, "required": list(descriptions)}


TOOLS = [
    tool("test_simple_text", "Tests simple text content response"),
    tool("test_image_content", "Tests image content response"),
    tool("test_audio_content", "Tests audio content response"),
    tool("test_embedded_resource", "Tests embedded resource content response"),
    tool("test_multiple_content_types", "Tests response with multiple content types (text, image, resource)"),
    tool("test_tool_with_logging", "Tests tool that emits log messages during execution"),
    tool("test_tool_with_progress", "Tests tool that reports progress notifications"),
    tool("test_error_handling", "Tests error response handling"),
    tool("test_sampling", "Tests server-initiated sampling (LLM completion request)", string_args(prompt="The prompt")),
    tool("test_elicitation", "Tests server-initiated elicitation", string_args(message="The message to show the user")),
    tool("test_elicitation_sep1034_defaults", "Tests elicitation with default values per SEP-1034"),
    tool("test_elicitation_sep1330_enums", "Tests elicitation with enum schema improvements per SEP-1330"),
    tool("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features (SEP-1613)", SCHEMA_2020_12),
    # Beyond the suite's fixtures, for the gateway's own tests:
    tool("fidelity", "Every kind of content block, with annotations, _meta and structured content"),
    tool("test_roots", "Asks the client for its roots and reports them"),
    tool("touch", "Announces an update of the resource `uri`", string_args(uri="The resource's URI")),
]
STATIC_RESULTS: dict[str, list[types.ContentBlock]] = {
    "test_simple_text": [text("This is a simple text response for testing.")],
    "test_image_content": [types.ImageContent(data=IMAGE, mime_type="image/png")],
    "test_audio_content": [types.AudioContent(data=AUDIO, mime_type="audio/wav")],
    "test_embedded_resource": [embedded("test://embedded-resource", "This is an embedded resource content.")],
    "test_multiple_content_types": [
        text("Multiple content types test:"),
        types.ImageContent(data=IMAGE, mime_type="image/png"),
        embedded("test://mixed-content-resource", json.dumps({"test": "data", "value": 123}), "application/json"),
    ],
}


FIDELITY = types.CallToolResult(
    content=[
        types.TextContent(text="text", annotations=types.Annotations(audience=["user"], priority=0.5)),
        types.ImageContent(data=IMAGE, mime_type="image/png", meta={"fixture/k": "image"}),
        types.AudioContent(data=AUDIO, mime_type="audio/wav"),
        types.ResourceLink(uri="test://static-text", name="static-text", mime_type="text/plain"),
        types.EmbeddedResource(
            resource=types.BlobResourceContents(uri="test://static-binary", mime_type="image/png", blob=IMAGE)
        ),
    ],
    structured_content={"kinds": 5, "nested": {"list": [1, 2.5, None, "x"]}},
    meta={"fixture/result": True},
)


def log(line: str, logger: str | None = None) -> types.LoggingMessageNotification:
    # The session's send_log_message is deprecated with the logging capability (2026); the wire message is not.
    return types.LoggingMessageNotification(
        params=types.LoggingMessageNotificationParams(level="info", data=line, logger=logger)
    )


def rooted(result: types.ListRootsResult) -> str:
    return "roots: " + ", ".join(str(root.uri) for root in result.roots)


def sampled(result: types.CreateMessageResult) -> str:
    content = result.content
    return f"LLM response: {content.text if isinstance(content, types.TextContent) else 'No response'}"


def elicited(prefix: str, result: types.ElicitResult) -> str:
    return f"{prefix}: action={result.action}, content={json.dumps(result.content or {})}"
