"""Hosted tools' contracts: one pydantic model per tool gives both its `inputSchema` and the check of its arguments.

The in-process servers (`gateway.*`, `think.*`, `prompt.*`) parse every call's arguments here before acting,
so what a tool declares and what it accepts cannot drift apart: `"force": "false"` is refused, never truthy.
Types are strict (a boolean is a boolean, an integer is not a string or `true`) and unknown names are refused;
`null` for an optional argument means "omitted".
"""

from collections.abc import Mapping
from functools import cache
from typing import Any, TypeVar

import mcp.types as types
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

A = TypeVar("A", bound="Arguments")
SHOWN = 60
"""Characters of an offending value quoted in an error (its full length is given when cut)."""
PROBLEMS = 10
"""Problems named in one refusal, at most."""
KINDS = {str: "string", bool: "boolean", int: "integer", float: "number", dict: "object", list: "array"}
"""A value's kind as JSON names it (the client sent JSON: `str` and `dict` would be Python's words)."""
EXPECTED = {
    "string_type": "a string",
    "bool_type": "a boolean",
    "int_type": "an integer",
    "float_type": "a number",
    "dict_type": "an object",
    "list_type": "an array",
}


class Arguments(BaseModel):
    """Base of a hosted tool's arguments."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class ArgumentsError(ValueError):
    """Arguments that do not fit the tool's declared schema: each problem names the argument, value and type."""

    def __init__(self, tool: str, problems: list[str], guidance: str) -> None:
        self.tool, self.problems, self.guidance = tool, problems, guidance
        super().__init__(f"invalid arguments for {tool}: {'; '.join(problems)}")

    def text(self) -> str:
        """The refusal as one text: what was wrong, then the tool's arguments."""
        return f"Invalid arguments for {self.tool}: {'; '.join(self.problems)}. {self.guidance}"


class _Schema(GenerateJsonSchema):
    """The schema clients see: no generated titles, optional arguments as their plain type (null = omitted)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        if schema.get("default", ...) is None:
            return self.generate_inner(schema["schema"])
        return super().default_schema(schema)


@cache  # one per model class: built once, shared by tools/list and every error's guidance
def input_schema(model: type[Arguments]) -> dict[str, Any]:
    schema = model.model_json_schema(schema_generator=_Schema)
    schema.pop("title", None)
    schema.pop("description", None)  # the model's docstring is for readers of the code; the tool has its own
    schema.pop("additionalProperties", None)  # refused with a clear error, but not advertised as a constraint
    return schema


def tool(name: str, description: str, model: type[Arguments]) -> types.Tool:
    return types.Tool(name=name, description=description, input_schema=input_schema(model))


def shown(value: Any) -> str:
    """A value as an error quotes it: its repr, cut to SHOWN characters, with its type and length when cut."""
    text = repr(value)
    kind = "null" if value is None else KINDS.get(type(value), type(value).__name__)
    if len(text) <= SHOWN:
        return f"{text} ({kind})"
    size = f"{len(value)} characters" if isinstance(value, str) else f"{len(text)} characters as text"
    return f"{text[:SHOWN]}… ({kind}, {size})"


def _problem(tool: str, error: Any) -> str:
    where = ".".join(str(p) for p in error["loc"]) or "(arguments)"
    if error["type"] == "missing":
        return f"`{where}` is required"
    if error["type"] == "extra_forbidden":
        return f"`{where}` is not an argument of {tool}"
    expected = EXPECTED.get(error["type"])
    return f"`{where}` = {shown(error['input'])}: {f'expected {expected}' if expected else error['msg']}"


def _shape(spec: Mapping[str, Any]) -> str:
    if "enum" in spec:
        return " | ".join(repr(v) for v in spec["enum"])
    parts = [str(spec.get("type", "any"))]
    if "pattern" in spec:
        parts.append(f" matching {spec['pattern']}")
    if "maxLength" in spec:
        parts.append(f", at most {spec['maxLength']} characters")
    low, high = spec.get("minimum"), spec.get("maximum")
    if low is not None and high is not None:
        parts.append(f" in [{low}, {high}]")
    elif low is not None or high is not None:
        parts.append(f" ≥ {low}" if low is not None else f" ≤ {high}")
    return "".join(parts)


def summary(tool: str, model: type[Arguments]) -> str:
    """`Arguments of t (* = required): a* (string), b (boolean).`: the guidance of an arguments error."""
    schema = input_schema(model)
    required = set(schema.get("required", []))
    shapes = [f"{n}{'*' if n in required else ''} ({_shape(s)})" for n, s in schema.get("properties", {}).items()]
    return f"Arguments of {tool} (* = required): {', '.join(shapes) or 'none'}."


def parse(tool: str, model: type[A], arguments: Mapping[str, Any] | None) -> A:
    """The arguments as `model`, checked against the tool's declared schema.

    Raises:
        ArgumentsError: every problem found (not only the first), and the tool's arguments as guidance.
    """
    try:
        return model.model_validate(dict(arguments or {}))
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        problems = [_problem(tool, e) for e in errors[:PROBLEMS]]
        if len(errors) > PROBLEMS:  # e.g. thousands of unknown names: the answer stays short
            problems.append(f"… and {len(errors) - PROBLEMS} more problems")
        raise ArgumentsError(tool, problems, summary(tool, model)) from None
