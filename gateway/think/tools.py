"""The Think tool definitions (the seed's input schemas); each description leads with its contract."""

from typing import Any

import mcp.types as types

STR: dict[str, Any] = {"type": "string"}
WORKFLOW: dict[str, Any] = {"type": "string", "description": "Workflow name, e.g. review_local_v1."}
RUN_ID: dict[str, Any] = {"type": "string", "description": "Run id from think.plan; omit for the latest active run."}


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str] | None = None) -> types.Tool:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return types.Tool(name=name, description=description, input_schema=schema)


THINK_TOOLS = [
    _tool(
        "plan",
        "Start a workflow run: returns the first instruction {step_id, call, input, ...} and a one-line `next`. "
        "Idempotent for a given run_id. Then execute the instruction and call think.next. "
        "Errors: UNKNOWN_WORKFLOW, YAML_SCHEMA_VIOLATION, INVALID_PARAMS (names the input).",
        {
            "workflow": WORKFLOW,
            "params": {"type": "object", "description": "Workflow inputs (see think.workflows.list)."},
            "run_id": {"type": "string", "description": "Optional id; planning an existing run returns its state."},
            "driver_version": {"type": "string", "description": "Driver prompt version; default: current."},
        },
        ["workflow"],
    ),
    _tool(
        "next",
        "Record a step's result and get the next instruction, or {done: true, summary, artifacts}. Only the ready "
        "step is accepted. result_snapshot may be omitted when the gateway says it recorded the step. "
        "Errors: VALIDATION_FAILED (field paths; step stays pending), STEP_NOT_READY, STEP_ALREADY_COMPLETED, "
        "UNKNOWN_STEP, STATE_CONFLICT. Keep result_snapshot under 50 KB: summaries and file:line references.",
        {
            "workflow": WORKFLOW,
            "run_id": RUN_ID,
            "step_id": {"type": "string", "description": "step_id from the instruction."},
            "result_snapshot": {"type": "object", "description": "Compact result of the step's call."},
            "force": {"type": "boolean", "description": "Replace the result of a step that is already done."},
        },
        ["workflow", "step_id"],
    ),
    _tool(
        "explain",
        "Why a step exists and what it needs: rationale, success schema, deps, status; without step_id, the "
        "run's progress and ready steps. Errors: UNKNOWN_STEP, UNKNOWN_RUN.",
        {"workflow": WORKFLOW, "run_id": RUN_ID, "step_id": STR},
        ["workflow"],
    ),
    _tool(
        "reset",
        "Roll a run back to a checkpoint (a completed step id), or clear it entirely with force: true. "
        "Errors: CHECKPOINT_NOT_FOUND, RESET_NOT_ALLOWED (clearing needs force), UNKNOWN_RUN.",
        {"workflow": WORKFLOW, "run_id": RUN_ID, "checkpoint": STR, "force": {"type": "boolean"}},
        ["workflow"],
    ),
    _tool(
        "driver_prompt",
        "The driver prompt that explains the plan → execute → next loop: {version, hash, prompt_md}. "
        "Read it once before running workflows. Errors: PROMPT_NOT_FOUND.",
        {"version": {"type": "string", "description": "Default: the current version."}},
    ),
    _tool(
        "workflows.list",
        "List workflows: name, description, tags, inputs. mode compact (default; short), standard or detailed; "
        "tags match all; filter is a substring. `detailed` is deprecated (use mode).",
        {
            "filter": STR,
            "tags": {"type": "array", "items": STR},
            "mode": {"enum": ["compact", "standard", "detailed"]},
            "detailed": {"type": "boolean", "description": "Deprecated: use mode."},
        },
    ),
    _tool(
        "workflows.read",
        "The workflow definition: its YAML text (format yaml, default) or the parsed form. Errors: UNKNOWN_WORKFLOW.",
        {"workflow": WORKFLOW, "format": {"enum": ["yaml", "parsed"]}},
        ["workflow"],
    ),
    _tool(
        "state.get",
        "A run's state: step statuses, captures (observed or reported), checkpoints, recent history and context "
        "metrics. Errors: UNKNOWN_RUN.",
        {"workflow": WORKFLOW, "run_id": RUN_ID},
        ["workflow"],
    ),
    _tool(
        "state.list",
        "The runs of a workflow, newest first: run_id, status, progress, updated.",
        {"workflow": WORKFLOW},
        ["workflow"],
    ),
    _tool(
        "validate",
        "Check a workflow (graph, templates, tools) with {workflow}, or a result against a named success schema "
        "with {schema, response}: {valid, errors[{path, message}]}.",
        {"workflow": WORKFLOW, "schema": STR, "response": {"type": "object"}},
    ),
    _tool(
        "debug",
        "Inspect a run: history with sizes, checkpoints, and the step-status diff since a checkpoint (from_step).",
        {"workflow": WORKFLOW, "run_id": STR, "action": {"enum": ["history", "diff"]}, "from_step": STR},
        ["workflow", "run_id"],
    ),
]

PROMPT_TOOLS = [
    _tool(
        "say",
        "Show a message to the user (instructions with call prompt.say). Returns {message, display, timestamp}.",
        {"text": {"type": "string"}},
        ["text"],
    ),
]
