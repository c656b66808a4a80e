"""The step graph of a workflow: driver injection, explicit + implicit deps, and the build-time diagnostics."""

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import partial

from gateway.think.errors import Diagnostic, ThinkError, diagnosed
from gateway.think.outcomes import OUTCOMES, outcome_problems
from gateway.think.templates import Templates
from gateway.think.workflow import DRIVER_ANNOUNCE, DRIVER_BOOTSTRAP, Step, Workflow, client_side, step_path

BUILTIN_NAMES = frozenset({"params", "run", "item", "loop", OUTCOMES})
LOOP_NAMES = frozenset({"item", "loop"})


def inject_driver(workflow: Workflow, version: str) -> Workflow:
    """Seed option A: unless the workflow fetches the driver itself, prepend fetch + announce and make
    the original entry steps wait for the announcement."""
    if any(step.call == "think.driver_prompt" for step in workflow.steps):
        return workflow
    bootstrap = Step(
        id=DRIVER_BOOTSTRAP,
        call="think.driver_prompt",
        input_template={"version": version},
        capture_as="__driver",
        rationale="Load the driver prompt so the loop (plan → execute → next) is followed exactly.",
    )
    announce = Step(
        id=DRIVER_ANNOUNCE,
        call="prompt.say",
        deps=(DRIVER_BOOTSTRAP,),
        input_template={
            "text": "Think Driver {{ __driver.version }} is loaded: follow it for this workflow "
            "(full text: the result of the previous step, or the resource gateway://prompts/{{ __driver.version }})."
        },
        rationale="Confirm the driver before the first real step.",
    )
    steps = [replace(s, deps=(DRIVER_ANNOUNCE,)) if not s.deps else s for s in workflow.steps]
    return replace(workflow, steps=(bootstrap, announce, *steps))


@dataclass(frozen=True, slots=True)
class Graph:
    workflow: Workflow
    steps: dict[str, Step]
    deps: dict[str, tuple[str, ...]]
    """Explicit deps plus implicit ones from template references to another step's `capture_as`."""
    producers: dict[str, str]
    """capture name -> the step that produces it."""
    reads: dict[str, frozenset[str]]
    """step id -> the captures its templates read; `""` -> those the workflow's `outputs` read."""


def _refs(templates: Templates, step: Step, where: str) -> set[str]:
    refs = templates.references(step.input_template)
    for field in ("when", "foreach"):
        expression = getattr(step, field)
        if expression:
            refs |= templates.expression_references(expression, f"{where}.{field}")
    return refs


def _find_cycle(deps: dict[str, tuple[str, ...]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 = on the current path, 2 = finished
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for dep in deps[node]:
            if state.get(dep) == 1:
                return [*path[path.index(dep) :], dep]
            if dep not in state and (cycle := visit(dep)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in deps:
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def build(workflow: Workflow, templates: Templates, known_tools: Iterable[str] | None = None) -> Graph:
    """Check the workflow as a graph, collecting every problem before failing.

    Raises:
        ThinkError: the first problem's code — UNKNOWN_STEP (a dep names no step), TEMPLATE_RENDER_ERROR (a
            template or when/foreach that does not parse), UNRESOLVED_VAR (a template names nothing),
            CYCLIC_DEPENDENCY (naming the cycle), UNKNOWN_TOOL (a call that is not in the catalog) — with
            all of them in `diagnostics` (file, path, message, guidance each).
    """
    steps = {s.id: s for s in workflow.steps}
    producers = {s.capture_as: s.id for s in workflow.steps if s.capture_as}
    inputs = set(workflow.inputs)
    problems: list[Diagnostic] = []
    deps: dict[str, tuple[str, ...]] = {}
    reads: dict[str, frozenset[str]] = {}
    for index, step in enumerate(workflow.steps):
        where = step_path(workflow, index, step)
        problem = partial(Diagnostic, file=workflow.source)
        missing = sorted(d for d in step.deps if d not in steps)
        if missing:
            problems.append(
                problem(
                    error="UNKNOWN_STEP",
                    path=f"{where}.deps",
                    message=f"step {step.id!r} depends on {missing}, which are not steps of {workflow.name}",
                    guidance=f"Use step ids that exist: {', '.join(steps)}.",
                )
            )
        implicit: list[str] = []
        try:
            refs = sorted(_refs(templates, step, where))
        except ThinkError as exc:
            problems.append(problem(error=exc.error_code, path=where, message=str(exc.details), guidance=exc.guidance))
            refs = []
        reads[step.id] = frozenset(r for r in refs if r in producers)
        for ref in refs:
            if ref in producers:
                if producers[ref] != step.id:
                    implicit.append(producers[ref])
            elif ref in LOOP_NAMES and not step.foreach:
                problems.append(
                    problem(
                        error="UNRESOLVED_VAR",
                        path=where,
                        message=f"step {step.id!r} uses {ref!r}, which only exists in a step with `foreach`",
                        guidance="Add a foreach to the step, or refer to a capture or params instead.",
                    )
                )
            elif ref not in BUILTIN_NAMES and ref not in inputs and workflow.declares_inputs:
                # Without an `inputs` block a bare name may be any param (the seeds write `{{path}}`): a missing
                # one is the seeds' render-time "missing variable", a TEMPLATE_RENDER_ERROR naming it.
                known = sorted(BUILTIN_NAMES | inputs | set(producers))
                problems.append(
                    problem(
                        error="UNRESOLVED_VAR",
                        path=where,
                        message=f"step {step.id!r} refers to {ref!r}, which is neither an input, a capture_as "
                        "nor a built-in",
                        guidance=f"Known names: {', '.join(known)}.",
                    )
                )
        deps[step.id] = tuple(dict.fromkeys([*(d for d in step.deps if d in steps), *implicit]))
    cycle = _find_cycle(deps)
    if cycle is not None:
        problems.append(
            Diagnostic(
                "CYCLIC_DEPENDENCY",
                workflow.source,
                "steps",
                f"steps depend on each other: {' -> '.join(cycle)}",
                "Remove one of these deps (or the template reference that implies it).",
            )
        )
    else:
        problems += outcome_problems(workflow, deps)
    if known_tools is not None:
        catalog = set(known_tools)
        for index, step in enumerate(workflow.steps):
            if client_side(step.call) or step.call.startswith("think.") or step.call in catalog:
                continue
            closest = difflib.get_close_matches(step.call, sorted(catalog), n=3, cutoff=0.5)
            problems.append(
                Diagnostic(
                    "UNKNOWN_TOOL",
                    workflow.source,
                    f"{step_path(workflow, index, step)}.call",
                    f"step {step.id!r} calls {step.call!r}, which no server behind the gateway offers",
                    "Check the server is configured and up (gateway.status)"
                    + (f"; closest tools: {', '.join(closest)}." if closest else "."),
                )
            )
    if problems:
        raise diagnosed(problems)
    try:
        reads[""] = frozenset(templates.references(workflow.outputs) & set(producers))
    except ThinkError:  # rendered when the run is done; its error is reported then
        reads[""] = frozenset(producers)
    return Graph(workflow, steps, deps, producers, reads)
