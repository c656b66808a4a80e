"""The Think tools: one arguments model each (its inputSchema and its check); descriptions lead with the contract."""

from typing import Annotated, Any, Literal

from pydantic import Field

from gateway.hosted.contracts import Arguments, tool
from gateway.think.format import NAME_MAX, NAME_PATTERN


def _name(description: str) -> Any:
    return Field(description=description, min_length=1, max_length=NAME_MAX, pattern=NAME_PATTERN)


WorkflowName = Annotated[str, _name("Workflow name, e.g. review_local_v1.")]
RunId = Annotated[str | None, _name("Run id from think.plan; omit for the latest active run.")]
StepId = Annotated[str, Field(min_length=1, max_length=256, description="step_id from the instruction.")]
Text = Annotated[str | None, Field(min_length=1, max_length=1024)]


class Plan(Arguments):
    workflow: WorkflowName
    params: Annotated[dict[str, Any] | None, Field(description="Workflow inputs (see think.workflows.list).")] = None
    run_id: Annotated[str | None, _name("Optional id; planning an existing run returns its state.")] = None
    driver_version: Annotated[Text, Field(description="Driver prompt version; default: current.")] = None


class Next(Arguments):
    workflow: WorkflowName
    run_id: RunId = None
    step_id: StepId
    result_snapshot: Annotated[dict[str, Any] | None, Field(description="Compact result of the step's call.")] = None
    force: Annotated[bool, Field(description="Replace the result of a step that is already done.")] = False
    # Parallel steps report one by one: steps this one does not depend on, done since, do not move its state_hash.
    state_hash: Annotated[
        str | None, Field(max_length=80, description="The instruction's state_hash: refused when the run moved on.")
    ] = None
    parallel: bool = False


class Explain(Arguments):
    workflow: WorkflowName
    run_id: RunId = None
    step_id: Annotated[str | None, Field(min_length=1, max_length=256)] = None
    view: Annotated[
        Literal["graph"] | None, Field(description="graph: the workflow's step graph even while a run is active.")
    ] = None


class Reset(Arguments):
    workflow: WorkflowName
    run_id: RunId = None
    checkpoint: Text = None
    force: Annotated[bool, Field(description="Needed to clear the run entirely.")] = False
    migrate: Annotated[
        bool,
        Field(
            description="Move the run to the workflow file as it is now (a run keeps the version it was planned "
            "with): steps done that the new version still has stay done, new ones are pending, removed ones go."
        ),
    ] = False


class DriverPrompt(Arguments):
    version: Annotated[Text, Field(description="Default: the current version.")] = None


class ListWorkflows(Arguments):
    filter: Text = None
    tags: list[Annotated[str, Field(max_length=256)]] | None = None
    mode: Literal["compact", "standard", "detailed"] | None = None
    detailed: Annotated[bool | None, Field(description="Deprecated: use mode.")] = None


class ReadWorkflow(Arguments):
    workflow: WorkflowName
    format: Literal["yaml", "parsed"] = "yaml"


class RunOf(Arguments):
    workflow: WorkflowName
    run_id: RunId = None


class Runs(Arguments):
    workflow: WorkflowName


class Validate(Arguments):
    workflow: Annotated[str | None, _name("Workflow name, e.g. review_local_v1.")] = None
    schema_: Annotated[  # `schema` would shadow a BaseModel attribute: the argument's name is the alias
        str | None,
        Field(
            alias="schema",
            description="A success schema's name (workflows/schemas/<name>.json).",
            min_length=1,
            max_length=NAME_MAX,
            pattern=NAME_PATTERN,
        ),
    ] = None
    response: dict[str, Any] | None = None


class Debug(Arguments):
    workflow: WorkflowName
    run_id: Annotated[str, _name("Run id from think.plan.")]
    action: Annotated[
        Literal["history", "diff", "replay"] | None,
        Field(
            description="history (default), diff (needs from_step), replay (re-run the state machine on the captures)."
        ),
    ] = None
    from_step: Annotated[str | None, Field(min_length=1, max_length=256)] = None


class Say(Arguments):
    text: str


CONTRACTS: dict[str, tuple[str, type[Arguments]]] = {
    "plan": (
        "Start a workflow run: returns the first instruction {step_id, call, input, ...} and a one-line `next`. "
        "Idempotent per run_id. Then execute the instruction and call think.next. "
        "Errors: UNKNOWN_WORKFLOW, YAML_SCHEMA_VIOLATION, INVALID_PARAMS (names the input).",
        Plan,
    ),
    "next": (
        "Record the ready step's result; get the next instruction (parallel: every ready one), or {done: true, "
        "summary, artifacts}. Omit result_snapshot if the gateway recorded the step; else keep it small. Errors: "
        "VALIDATION_FAILED, STEP_NOT_READY, STEP_ALREADY_COMPLETED, STATE_CONFLICT.",
        Next,
    ),
    "explain": (
        "Why a step exists and what it needs: rationale, success schema, deps, status; without step_id, the "
        "run's progress and ready steps, or with no run (or view: graph) the step graph: nodes, entry steps, "
        "deps, when/foreach markers, an order. Errors: UNKNOWN_STEP, UNKNOWN_RUN.",
        Explain,
    ),
    "reset": (
        "Roll a run back to a checkpoint (a completed step id), or clear it entirely with force: true. "
        "Errors: CHECKPOINT_NOT_FOUND, RESET_NOT_ALLOWED (clearing needs force), UNKNOWN_RUN.",
        Reset,
    ),
    "driver_prompt": (
        "The driver prompt that explains the plan → execute → next loop: {version, hash, prompt_md}. "
        "Read it once before running workflows. Errors: PROMPT_NOT_FOUND.",
        DriverPrompt,
    ),
    "workflows.list": (
        "List workflows: name, description, tags, inputs. mode compact (default; short), standard or detailed; "
        "tags match all; filter is a substring.",
        ListWorkflows,
    ),
    "workflows.read": (
        "The workflow definition: its YAML text (format yaml, default) or the parsed form. Errors: UNKNOWN_WORKFLOW.",
        ReadWorkflow,
    ),
    "state.get": (
        "A run's state: step statuses, captures (observed or reported), checkpoints, recent history and context "
        "metrics. Errors: UNKNOWN_RUN.",
        RunOf,
    ),
    "state.list": ("The runs of a workflow, newest first: run_id, status, progress, updated.", Runs),
    "validate": (
        "Check a workflow (graph, templates, tools) with {workflow}, or a result against a named success schema "
        "with {schema, response}: {valid, errors[{path, message}]}.",
        Validate,
    ),
    "debug": (
        "Inspect a run: action history (default: events with sizes, checkpoints), diff (step statuses since the "
        "checkpoint from_step) or replay (re-run the run's steps on its recorded captures: identical, or where "
        "it differs). Errors: UNKNOWN_RUN, CHECKPOINT_NOT_FOUND.",
        Debug,
    ),
}
PROMPT_CONTRACTS: dict[str, tuple[str, type[Arguments]]] = {
    "say": (
        "Show a message to the user (instructions with call prompt.say). Returns {message, display, timestamp}.",
        Say,
    ),
}
THINK_TOOLS = [tool(name, description, model) for name, (description, model) in CONTRACTS.items()]
PROMPT_TOOLS = [tool(name, description, model) for name, (description, model) in PROMPT_CONTRACTS.items()]
