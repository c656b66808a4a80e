"""The workflow file's format: its JSON Schema (the YAML is checked against it before anything reads it) and the
rule for the names of workflows, runs and schemas."""

import re
from typing import Any

import jsonschema

from gateway.think.errors import ThinkError

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*\.?$"
NAME_MAX = 64
"""Workflow names, run ids and schema names: letters, digits, '_', '-' and single dots, safe as file names (no
`..`, no `/`, short enough for any file system); said in each tool's inputSchema and in every refusal."""
NAME = re.compile(NAME_PATTERN)
STEP_ID = r"^[A-Za-z_][A-Za-z0-9_]*$"
_LIMITS: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "max_snapshot_bytes": {"type": "integer", "minimum": 1},
        "max_string_bytes": {"type": "integer", "minimum": 1},
        "truncation_strategy": {"enum": ["head", "tail", "both", "summary"]},
        "external_storage_threshold": {"type": "integer", "minimum": 1},
        "max_context_bytes": {"type": "integer", "minimum": 0},
        "max_context_tasks": {"type": "integer", "minimum": 0},
        "pruning": {"enum": ["most_recent", "highest_relevance", "lru", "direct_dependencies"]},
        "keep_count": {"type": "integer", "minimum": 0},
        "prune_every": {"type": "integer", "minimum": 1},
    },
}
_NAMES: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
_CONTEXT: dict[str, Any] = {  # seed 001's task-level context control, or a list of captures always included
    "oneOf": [
        _NAMES,
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "include_tasks": _NAMES,
                "exclude_tasks": _NAMES,
                "mode": {"enum": ["automatic", "manual", "none"]},
                "min_relevance": {"type": "number", "minimum": 0, "maximum": 1},
                "max_bytes": {"type": "integer", "minimum": 0},
            },
        },
    ]
}
_SECONDS: dict[str, Any] = {"type": "number", "minimum": 0, "maximum": 86_400}
_RETRY: dict[str, Any] = {  # per observed step: attempts in all (the first included), and the wait between them
    "type": "object",
    "required": ["attempts"],
    "additionalProperties": False,
    "properties": {
        "attempts": {"type": "integer", "minimum": 1, "maximum": 100},
        "backoff": {
            "oneOf": [
                _SECONDS,
                {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "initial": _SECONDS,
                        "factor": {"type": "number", "minimum": 1, "maximum": 10},
                        "max": _SECONDS,
                    },
                },
            ]
        },
    },
}
SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["name", "version", "steps"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "pattern": NAME_PATTERN, "maxLength": NAME_MAX},
        "version": {"type": ["string", "number"]},
        "description": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "author": {"type": "string"},
        "driver_version": {"type": "string"},
        "inputs": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "type": {"enum": ["string", "integer", "number", "boolean", "object", "array"]},
                    "description": {"type": "string"},
                    "required": {"type": "boolean"},
                    "default": {},
                    "enum": {"type": "array"},
                },
            },
        },
        "outputs": {"type": "object"},
        "limits": _LIMITS,
        "steps": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["id", "call"],
                "additionalProperties": False,
                "properties": {
                    "id": {"type": "string", "pattern": STEP_ID},
                    "call": {"type": "string", "minLength": 1},
                    "deps": {"type": "array", "items": {"type": "string"}},
                    "input_template": {},
                    "capture_as": {"type": "string", "pattern": STEP_ID},
                    "success_schema": {"type": ["string", "object"]},
                    "rationale": {"type": "string"},
                    "timeout_s": {"type": "number", "exclusiveMinimum": 0},
                    "when": {"type": "string"},
                    "foreach": {"type": "string"},
                    "retry": _RETRY,
                    "continue_on_error": {"type": "boolean"},
                    "limits": _LIMITS,
                    "context": _CONTEXT,
                    "inject_context": {"type": "boolean"},
                },
            },
        },
    },
}
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def check_name(kind: str, value: str) -> str:
    """Names and ids become file names: allow only a safe alphabet (no `/`, no `..`)."""
    if len(value) > NAME_MAX or not NAME.fullmatch(value):
        code = "UNKNOWN_WORKFLOW" if kind == "workflow" else "UNKNOWN_RUN"
        shown = value if len(value) <= 80 else f"{value[:80]}… ({len(value)} characters)"
        raise ThinkError(code, f"{kind} {shown!r} is not a valid name", name_rule())
    return value


def name_rule() -> str:
    return (
        f"Names and ids match {NAME_PATTERN} (letters, digits, '_', '-' and single dots) "
        f"and have at most {NAME_MAX} characters."
    )
