"""Workflow definitions: the YAML format (JSON-Schema validated; errors name file and path) and the library."""

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import jsonschema

from gateway.config.bundled import shipped
from gateway.think import aliases
from gateway.think.errors import Diagnostic, ThinkError
from gateway.think.format import VALIDATOR

DEFAULT_DIR = shipped("workflows")
MAX_PROBLEMS = 100
DRIVER_BOOTSTRAP = "__driver_bootstrap"
DRIVER_ANNOUNCE = "__driver_announce"
"""A file can be wrong in many places; past this many the rest would only repeat the same mistake."""


@dataclass(frozen=True, slots=True)
class Context:
    """Seed 001's task-level context control. `include` (captures or the steps producing them) come first;
    mode automatic adds the relevant others (dependency-based), manual only `include`, none nothing (also
    `inject_context: false`). `exclude` never; `min_relevance` drops weaker automatic ones; `max_bytes` is this
    step's budget instead of `limits.max_context_bytes`. A list (`context: [a, b]`) is `include` in automatic mode."""

    mode: Literal["automatic", "manual", "none"] = "automatic"
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    min_relevance: float = 0.0
    max_bytes: int | None = None

    @classmethod
    def of(cls, step: dict[str, Any]) -> "Context":
        given = step.get("context", [])
        if isinstance(given, list):
            given = {"include_tasks": given, "mode": "automatic"} if given else {}
        include = tuple(given.get("include_tasks", ()))
        # "include only these" (seed 001): naming tasks without a mode means manual
        mode = given.get("mode", "manual" if include else "automatic")
        return cls(
            mode="none" if step.get("inject_context") is False else mode,
            include=include,
            exclude=tuple(given.get("exclude_tasks", ())),
            min_relevance=float(given.get("min_relevance", 0.0)),
            max_bytes=given.get("max_bytes"),
        )


@dataclass(frozen=True, slots=True)
class Retry:
    """A step's retry policy: `attempts` in all (the first included); after the k-th failure the next attempt waits
    `backoff` seconds, or `min(max, initial * factor ** (k - 1))` for an exponential backoff."""

    attempts: int
    initial: float = 0.0
    factor: float = 1.0
    max: float = 300.0

    @classmethod
    def of(cls, given: dict[str, Any] | None) -> "Retry | None":
        if given is None:
            return None
        backoff = given.get("backoff", 0)
        if not isinstance(backoff, dict):
            return cls(given["attempts"], float(backoff), 1.0, float(backoff))
        initial = float(backoff.get("initial", 1))
        return cls(given["attempts"], initial, float(backoff.get("factor", 2)), float(backoff.get("max", 300)))

    def delay(self, failures: int) -> float:
        """Seconds to wait before the attempt after the `failures`-th failure."""
        return min(self.max, self.initial * self.factor ** (failures - 1))


@dataclass(frozen=True, slots=True)
class Step:
    id: str
    call: str
    deps: tuple[str, ...] = ()
    input_template: Any = None
    capture_as: str | None = None
    success_schema: str | dict[str, Any] | None = None
    rationale: str = ""
    timeout_s: float | None = None
    when: str | None = None
    foreach: str | None = None
    limits: dict[str, Any] = field(default_factory=dict[str, Any])
    context: Context = field(default_factory=Context)
    """Which earlier captures this step's instruction carries."""
    retry: Retry | None = None
    continue_on_error: bool = False
    """A failure of this step (once its retries are used) lets the run go on; else the run stops as failed."""


@dataclass(frozen=True, slots=True)
class Workflow:
    name: str
    version: str
    steps: tuple[Step, ...]
    description: str = ""
    tags: tuple[str, ...] = ()
    author: str = ""
    driver_version: str | None = None
    inputs: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])
    outputs: dict[str, Any] = field(default_factory=dict[str, Any])
    limits: dict[str, Any] = field(default_factory=dict[str, Any])
    source: str = ""
    """The file it came from."""
    declares_inputs: bool = True
    digest: str = ""
    """The file's content hash (`sha256:` + 16 hex): the version a run is pinned to."""
    text: str = field(default="", repr=False, compare=False)
    """The file's text, stored with each run planned on it (a run keeps its workflow when the file is edited)."""
    """False for a workflow without an `inputs` block (the seeds' examples): its params are free-form."""


def _fix(error: jsonschema.ValidationError) -> str:
    """What to write instead, from the failing schema keyword."""
    match error.validator:
        case "additionalProperties":
            allowed = sorted(error.schema.get("properties", {})) if isinstance(error.schema, dict) else []
            return f"Remove or rename the key; allowed here: {', '.join(allowed)}."
        case "required":
            return "Add the missing key."
        case "enum":
            return f"Use one of {error.validator_value}."
        case "type":
            return f"Write a value of type {error.validator_value}."
        case "pattern":
            return f"Match the pattern {error.validator_value}."
        case _:
            return "Fix the value at this path (see the workflow format in the README)."


def _path(error: jsonschema.ValidationError) -> str:
    parts = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return parts.lstrip(".") or "(top level)"


def _translated(data: Any, source: str) -> tuple[Any, list[Diagnostic]]:
    """`data` with the seeds' `limits` aliases translated (workflow and step level), and the problems found."""
    if not isinstance(data, dict):
        return data, []
    data = dict(data)
    problems: list[Diagnostic] = []
    if "hooks" in data:
        problems += aliases.prune_hooks(data, source)
    if "limits" in data:
        data["limits"], found = aliases.translate(data["limits"], source, "limits")
        problems += found
    if isinstance(data.get("steps"), list):
        steps = []
        for index, step in enumerate(data["steps"]):
            if isinstance(step, dict) and "limits" in step:
                step = dict(step)
                step["limits"], found = aliases.translate(step["limits"], source, f"steps[{index}].limits")
                problems += found
            if isinstance(step, dict):
                step, found = aliases.repeat_loop(step, source, f"steps[{index}]")
                problems += found
            steps.append(step)
        data["steps"] = steps
    return data, problems


def parse(data: Any, source: str) -> Workflow:
    """Validate loaded YAML against `SCHEMA` and build the workflow.

    Raises:
        ThinkError: YAML_SCHEMA_VIOLATION naming the file and every failing path (`details`, one line each;
            `diagnostics`, one object each with its fix).
    """
    data, problems = _translated(data, source)
    for error in sorted(VALIDATOR.iter_errors(data), key=lambda e: list(e.absolute_path)):
        problems.append(Diagnostic("YAML_SCHEMA_VIOLATION", source, _path(error), error.message, _fix(error)))
    if not problems:
        ids = [s["id"] for s in data["steps"]]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            problems.append(
                Diagnostic(
                    "YAML_SCHEMA_VIOLATION",
                    source,
                    "steps",
                    f"duplicate step ids {duplicates}",
                    "Give every step a unique id.",
                )
            )
    if problems:
        raise ThinkError(
            "YAML_SCHEMA_VIOLATION",
            [p.line() for p in problems[:MAX_PROBLEMS]],
            "Fix the workflow file at the paths named; `think.validate {workflow}` re-checks it.",
            diagnostics=[asdict(p) for p in problems[:MAX_PROBLEMS]],
        )
    steps = tuple(
        Step(
            id=s["id"],
            call=s["call"],
            deps=tuple(s.get("deps", ())),
            input_template=s.get("input_template"),
            capture_as=s.get("capture_as"),
            success_schema=s.get("success_schema"),
            rationale=s.get("rationale", ""),
            timeout_s=s.get("timeout_s"),
            when=s.get("when"),
            foreach=s.get("foreach"),
            limits=dict(s.get("limits", {})),
            context=Context.of(s),
            retry=Retry.of(s.get("retry")),
            continue_on_error=s.get("continue_on_error", False),
        )
        for s in data["steps"]
    )
    return Workflow(
        name=data["name"],
        version=str(data["version"]),
        steps=steps,
        description=data.get("description", ""),
        tags=tuple(data.get("tags", ())),
        author=data.get("author", ""),
        driver_version=data.get("driver_version"),
        inputs=dict(data.get("inputs", {})),
        outputs=dict(data.get("outputs", {})),
        limits=dict(data.get("limits", {})),
        source=source,
        declares_inputs="inputs" in data,
    )


def client_side(call: str) -> bool:
    """Actions the client performs itself: `local.*` and `prompt.say` are not gateway tools."""
    return call.startswith("local.") or call == "prompt.say"


def observable(call: str) -> bool:
    """Calls that pass through the gateway, so it can record their result: everything but `local.*`
    (`prompt.say` and `think.driver_prompt` included: they are tools of the gateway's own servers)."""
    return not call.startswith("local.")


def step_path(workflow: Workflow, index: int, step: Step) -> str:
    """The step's path in its file (`steps[3]`; messages name the id); injected driver steps are not in it."""
    offset = sum(1 for s in workflow.steps[:index] if s.id in (DRIVER_BOOTSTRAP, DRIVER_ANNOUNCE))
    if step.id in (DRIVER_BOOTSTRAP, DRIVER_ANNOUNCE):
        return f"(injected step {step.id})"
    return f"steps[{index - offset}]"
