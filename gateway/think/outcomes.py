"""Steps that fail: the outcome tests a `when` may use, and what a failure means for the steps after it.

A step the gateway observes fails when its call answers a tool error, a server error or a timeout. With `retry`
it is handed out again until its attempts are used; then it is `failed`. `when: failed(x)`, `succeeded(x)` and
`always()` test outcomes (templates cannot call functions: they are lowered to a look-up in `OUTCOMES`, a map of
step id -> outcome the engine passes in). A step without such a test runs only when nothing it depends on failed,
and only while the run goes on: a failed step without `continue_on_error` stops it (GitHub Actions' rule).
"""

import re
from datetime import UTC, datetime
from typing import Any, Literal

from gateway.think.errors import Diagnostic
from gateway.think.state import RunState, StepState
from gateway.think.workflow import Retry, Workflow, observable, step_path

OUTCOMES = "__outcomes"
"""The template variable the outcome tests read (a built-in name, like `params`)."""
Outcome = Literal["succeeded", "failed", "skipped", "pending"]
_ID = r"[A-Za-z_][A-Za-z0-9_]*"
_TEST = re.compile(rf"\b(failed|succeeded)\(\s*(?:'({_ID})'|\"({_ID})\"|({_ID}))\s*\)")
_ALWAYS = re.compile(r"\balways\(\s*\)")
_ANY = re.compile(r"\b(?:failed|succeeded|always)\s*\(")
ERROR_CHARS = 500
"""A failure's text kept in the state and shown in instructions (the whole result is the client's already)."""


def lowered(expression: str) -> str:
    """`failed(x)` (or `failed('x')`) -> `(__outcomes['x'] == 'failed')`, `always()` -> `true`."""
    text = _TEST.sub(lambda m: f"({OUTCOMES}['{m[2] or m[3] or m[4]}'] == '{m[1]}')", expression)
    return _ALWAYS.sub("true", text)


def tested(expression: str | None) -> list[str]:
    """The step ids a `when` tests the outcome of, in order."""
    return list(dict.fromkeys(m[2] or m[3] or m[4] for m in _TEST.finditer(expression or "")))


def aware(expression: str | None) -> bool:
    """Whether a `when` tests outcomes: such a step decides itself whether it runs after a failure."""
    return expression is not None and _ANY.search(expression) is not None


def outcome(state: RunState, sid: str) -> Outcome:
    """A step's outcome; a foreach parent's is failed when an item failed, succeeded when all are settled."""
    st = state.steps[sid]
    if st.status == "done":
        return "succeeded"
    if st.status in ("failed", "skipped"):
        return st.status
    if st.status == "expanded":
        kids = [outcome(state, c) for c, k in state.steps.items() if k.template_of == sid and k.index is not None]
        if "failed" in kids:
            return "failed"
        return "pending" if "pending" in kids else "succeeded"
    return "pending"


def outcomes(state: RunState) -> dict[str, Outcome]:
    return {sid: outcome(state, sid) for sid in state.steps}


def blocker(state: RunState, sid: str) -> str | None:
    """The failed step that keeps `sid` from running: a dep that failed, or the cause a dep was skipped for."""
    for dep in state.steps[sid].deps:
        if outcome(state, dep) == "failed":
            return dep
        cause = state.steps[dep].blocked_by or next(
            (k.blocked_by for k in state.steps.values() if k.template_of == dep and k.blocked_by), None
        )
        if cause is not None:
            return cause
    return None


def stopper(state: RunState, continues: dict[str, bool]) -> str | None:
    """The first failed step whose workflow step has no `continue_on_error` (`continues`, by template id): the run
    stops there."""
    return next(
        (s for s, st in state.steps.items() if st.status == "failed" and not continues[st.template_of or s]), None
    )


def retrying(st: StepState, retry: Retry, now: float) -> dict[str, Any]:
    """What an instruction re-issuing a failed step says: which attempt, the last error, and when."""
    wait = max(0.0, (st.not_before or now) - now)
    return {
        "attempt": st.attempts + 1,
        "of": retry.attempts,
        "last_error": st.error,
        "not_before": _utc(st.not_before or now),
        "wait_s": round(wait, 1),
    }


def _utc(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def retry_line(sid: str, info: dict[str, Any]) -> str:
    """The sentence an instruction or a hint starts with for a step to be made again."""
    wait = f"in {info['wait_s']} s, " if info["wait_s"] else ""
    return (
        f"Step {sid} failed (attempt {info['attempt'] - 1} of {info['of']}: {info['last_error']}). "
        f"Retry not before {info['not_before']} ({wait}attempt {info['attempt']} of {info['of']})"
    )


def _upstream(deps: dict[str, tuple[str, ...]], sid: str) -> set[str]:
    found: set[str] = set()
    todo = list(deps[sid])
    while todo:
        dep = todo.pop()
        if dep not in found:
            found.add(dep)
            todo.extend(deps[dep])
    return found


def outcome_problems(workflow: Workflow, deps: dict[str, tuple[str, ...]]) -> list[Diagnostic]:
    """`when: failed(x)`/`succeeded(x)` edges: x must be a step, and upstream (x has an outcome when the step is
    decided); `retry`/`continue_on_error` only where the gateway can see the call fail."""
    problems: list[Diagnostic] = []
    for index, step in enumerate(workflow.steps):
        where = step_path(workflow, index, step)
        for name in tested(step.when):
            if name not in deps:
                problems.append(
                    Diagnostic(
                        "UNKNOWN_STEP",
                        workflow.source,
                        f"{where}.when",
                        f"step {step.id!r} tests the outcome of {name!r}, which is not a step of {workflow.name}",
                        f"Test a step that exists: {', '.join(s.id for s in workflow.steps if s.id[:2] != '__')}.",
                    )
                )
            elif name not in _upstream(deps, step.id):
                problems.append(
                    Diagnostic(
                        "STEP_NOT_UPSTREAM",
                        workflow.source,
                        f"{where}.when",
                        f"step {step.id!r} tests the outcome of {name!r}, which is not upstream of it: {step.id!r} "
                        f"could be decided before {name!r} has an outcome",
                        f"Add {name!r} to the deps of {step.id!r} (deps: [{', '.join([*step.deps, name])}]).",
                    )
                )
        if (step.retry is not None or step.continue_on_error) and not observable(step.call):
            problems.append(
                Diagnostic(
                    "YAML_SCHEMA_VIOLATION",
                    workflow.source,
                    where,
                    f"step {step.id!r} has retry/continue_on_error but calls {step.call!r}, which the client does "
                    "itself: the gateway never sees it fail",
                    "Remove retry and continue_on_error from the step, or make it a call through the gateway.",
                )
            )
    return problems
