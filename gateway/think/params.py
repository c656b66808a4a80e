"""Workflow inputs at plan time: required ones present, types right, defaults applied (INVALID_PARAMS otherwise)."""

from typing import Any

from gateway.think.errors import ThinkError
from gateway.think.workflow import Workflow

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


def check_params(workflow: Workflow, params: dict[str, Any]) -> dict[str, Any]:
    """The params with defaults filled in (a workflow without an `inputs` block takes any params as they are).

    Raises:
        ThinkError: INVALID_PARAMS naming the input (missing, wrong type, not in the enum, or unknown).
    """
    if not workflow.declares_inputs:
        return dict(params)  # the seeds' examples declare no inputs: params are free-form, read as params.<name>
    inputs = workflow.inputs
    problems = [f"{name!r} is not an input of {workflow.name}" for name in params if name not in inputs]
    values = dict(params)
    for name, spec in inputs.items():
        if name not in values:
            if "default" in spec:
                values[name] = spec["default"]
            elif spec.get("required", False):
                problems.append(f"{name!r} is required ({spec.get('description', 'no description')})")
            continue
        value, kind = values[name], spec.get("type")
        allowed = _TYPES.get(kind or "", ())
        # bool is an int in Python; an integer input must not accept true/false.
        if allowed and (not isinstance(value, allowed) or (isinstance(value, bool) and kind != "boolean")):
            problems.append(f"{name!r} must be {kind}, got {type(value).__name__} {value!r}")
        elif "enum" in spec and value not in spec["enum"]:
            problems.append(f"{name!r} must be one of {spec['enum']}, got {value!r}")
    if problems:
        summary = ", ".join(f"{n}{'*' if s.get('required') else ''}: {s.get('type', 'any')}" for n, s in inputs.items())
        raise ThinkError("INVALID_PARAMS", problems, f"Inputs of {workflow.name} (* = required): {summary or 'none'}.")
    return values
