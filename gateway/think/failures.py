"""A failure of a step's call the gateway saw (a tool error, a server error, a timeout), recorded against the step:
another attempt after the backoff while `retry` allows, else the step is `failed` and the run settles around it
(`gateway.think.outcomes`). What each answer says the model should do next is written here."""

import time
from typing import Any

from gateway.think import runner
from gateway.think.errors import ThinkError
from gateway.think.graph import Graph
from gateway.think.outcomes import ERROR_CHARS, retry_line, retrying, stopper
from gateway.think.state import RunState
from gateway.think.templates import Templates


def _ref(state: RunState, sid: str) -> str:
    return f'{{"workflow": "{state.workflow}", "run_id": "{state.run_id}", "step_id": "{sid}"}}'


def early(state: RunState, graph: Graph, sid: str, now: float) -> str | None:
    """Why a call of `sid` made before its retry time is not recorded; None when it may be made now."""
    st = state.steps[sid]
    retry = graph.steps[st.template_of or sid].retry
    if st.not_before is None or now >= st.not_before or retry is None:
        return None
    info = retrying(st, retry, now)
    return (
        f"Step `{sid}` of run {state.run_id}: this call was made before its retry time and is not recorded. "
        f"{retry_line(sid, info)}: make the call again then."
    )


def not_before(state: RunState, graph: Graph, sid: str, now: float) -> None:
    """Raises: ThinkError RETRY_NOT_BEFORE for a result reported for `sid` before its retry time."""
    st = state.steps[sid]
    retry = graph.steps[st.template_of or sid].retry
    if retry is None or st.not_before is None or now >= st.not_before:
        return
    info = retrying(st, retry, now)
    raise ThinkError(
        "RETRY_NOT_BEFORE",
        f"step {sid!r} of run {state.run_id} failed (attempt {st.attempts} of {retry.attempts}: {st.error}); retry "
        f"not before {info['not_before']} (in {info['wait_s']} s)",
        "Wait until then, make the step's call again with exactly its input, then call think.next.",
    )


def fail(state: RunState, graph: Graph, templates: Templates, sid: str, error: str, now: float) -> str:
    """Record a failed attempt of `sid`; the hint for the failed call (what happens now, and the next call)."""
    st = state.steps[sid]
    step = graph.steps[st.template_of or sid]
    st.attempts += 1
    st.error = error if len(error) <= ERROR_CHARS else f"{error[:ERROR_CHARS]}… ({len(error)} characters)"
    state.log("fail", sid, detail=f"attempt {st.attempts}: {st.error}")
    if step.retry is not None and st.attempts < step.retry.attempts:
        st.not_before = now + step.retry.delay(st.attempts)
        info = retrying(st, step.retry, now)
        return f"{retry_line(sid, info)}. Next: think.next {_ref(state, sid)} re-issues it."
    st.status, st.not_before = "failed", None
    state.clock += 1
    st.completed_at = state.clock
    runner.advance(state, graph, templates)
    tries = f" after {st.attempts} attempts" if st.attempts > 1 else ""
    if step.continue_on_error:
        then = "The run goes on (continue_on_error); steps that need its result are skipped."
    else:
        then = f"The run stops; only steps that test failed({step.id}) or always() still run."
    return f"Step `{sid}` of run {state.run_id} failed{tries}: {st.error}. {then} Next: think.next {_ref(state, sid)}."


def status_line(state: RunState, graph: Graph, sid: str) -> str:
    """The note on a think.next for a step whose last attempt failed (the gateway has no result to record)."""
    st = state.steps[sid]
    retry = graph.steps[st.template_of or sid].retry
    if st.status == "pending" and retry is not None:
        return retry_line(sid, retrying(st, retry, time.time()))
    return f"step {sid} failed after {st.attempts} attempt(s): {st.error}"


def summary(state: RunState, graph: Graph) -> dict[str, Any]:
    """What the done answer adds about failures: the status, every failed step, and for a stopped run what next."""
    failed = [
        {"step_id": sid, "error": st.error, "attempts": st.attempts}
        for sid, st in state.steps.items()
        if st.status == "failed"
    ]
    stop = stopper(state, {sid: step.continue_on_error for sid, step in graph.steps.items()})
    state.status = "failed" if stop is not None else "done"
    body: dict[str, Any] = {"status": state.status}
    if failed:
        body["failed"] = failed
    if stop is not None:
        error = state.steps[stop].error
        body["next"] = (
            f"Tell the user the run failed at step {stop}: {error}. Fix the cause, then start a new run with "
            "think.plan, or roll this one back to a step done before it (think.reset {checkpoint}) and go on; a "
            "`retry` on the step or `continue_on_error: true` in the workflow lets a run get past such failures."
        )
    return body
