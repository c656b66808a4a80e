"""The run state machine: which steps are ready, `when` and `foreach` at readiness, captures, instructions."""

import time
from dataclasses import replace
from typing import Any

from gateway.think import outcomes
from gateway.think.context import Limits, TaskOutput, full_value, relevance, select
from gateway.think.errors import ThinkError
from gateway.think.graph import Graph
from gateway.think.seednames import with_seed_names
from gateway.think.state import RunState, StepState
from gateway.think.statehash import state_hash
from gateway.think.templates import Templates
from gateway.think.workflow import observable


def new_steps(graph: Graph) -> dict[str, StepState]:
    return {
        sid: StepState(call=step.call, deps=list(graph.deps[sid]), template_of=sid) for sid, step in graph.steps.items()
    }


def complete(state: RunState, step_id: str) -> bool:
    step = state.steps[step_id]
    if step.status in ("done", "skipped", "failed"):
        return True
    if step.status == "expanded":
        return all(complete(state, c) for c in children(state, step_id))
    return False


def children(state: RunState, parent: str) -> list[str]:
    return [sid for sid, st in state.steps.items() if st.template_of == parent and st.index is not None]


def waiting_on(state: RunState, step_id: str) -> list[str]:
    return [d for d in state.steps[step_id].deps if not complete(state, d)]


def variables(state: RunState, graph: Graph, step: StepState | None = None) -> dict[str, Any]:
    """Template context: params (also by bare name), captures (whole values), run, and item/loop in a foreach."""
    ctx: dict[str, Any] = {
        **state.params,
        "params": state.params,
        "run": {"id": state.run_id, "workflow": state.workflow},
    }
    for name, producer in graph.producers.items():
        if graph.steps[producer].foreach:
            kids = sorted(children(state, producer), key=lambda c: state.steps[c].index or 0)
            ctx[name] = [_capture_value(state, f"{name}[{state.steps[k].index}]") for k in kids]
        elif name in state.captures:
            ctx[name] = _capture_value(state, name)
    if step is not None and step.index is not None:
        total = len(children(state, step.template_of or ""))
        ctx["item"] = step.item
        ctx["loop"] = {"index": step.index + 1, "index0": step.index, "length": total}
    return ctx


def _capture_value(state: RunState, key: str) -> Any:
    record = state.captures.get(key)
    return None if record is None else full_value(TaskOutput.model_validate(record), state.spills)


def advance(state: RunState, graph: Graph, templates: Templates) -> None:
    """Settle every step whose deps are complete: skip it when a failure keeps it from running (see
    `gateway.think.outcomes`) or on a false `when`, expand a `foreach`. Repeat to a fixpoint."""
    continues = {sid: step.continue_on_error for sid, step in graph.steps.items()}
    changed = True
    while changed:
        changed = False
        for sid in list(state.steps):
            st = state.steps[sid]
            if st.status != "pending" or waiting_on(state, sid):
                continue
            step = graph.steps[st.template_of or sid]
            where = f"{graph.workflow.source}: steps.{step.id}"
            if not outcomes.aware(step.when):
                cause = outcomes.blocker(state, sid)
                stop = None if cause else outcomes.stopper(state, continues)
                if cause or stop:
                    st.status, st.blocked_by = "skipped", cause or stop
                    st.reason = f"step {cause} failed" if cause else f"the run stopped: step {stop} failed"
                    state.observed.pop(sid, None)  # made meanwhile (handed out in parallel): no longer wanted
                    state.log("skip", sid, detail=st.reason)
                    changed = True
                    continue
            if step.foreach and st.index is None:
                items = templates.evaluate(step.foreach, variables(state, graph), f"{where}.foreach")
                if not isinstance(items, list):
                    raise ThinkError(
                        "TEMPLATE_RENDER_ERROR",
                        f"{where}.foreach: {step.foreach!r} is {type(items).__name__}, not a list",
                        "foreach must name a list (a params list or a capture that is a list).",
                    )
                _expand(state, sid, items)
                state.log("expand", sid, detail=f"{len(items)} items")
                changed = True
                continue
            if step.when:
                context = {**variables(state, graph, st), outcomes.OUTCOMES: outcomes.outcomes(state)}
                keep = templates.evaluate(step.when, context, f"{where}.when")
                if not keep:
                    st.status, st.reason = "skipped", f"when {step.when!r} was false"
                    state.log("skip", sid, detail=st.reason)
                    changed = True


def _expand(state: RunState, parent: str, items: list[Any]) -> None:
    st = state.steps[parent]
    st.status = "expanded"
    expanded: dict[str, StepState] = {}
    for sid, existing in state.steps.items():
        expanded[sid] = existing
        if sid == parent:
            for i, item in enumerate(items):
                expanded[f"{parent}[{i}]"] = StepState(
                    call=st.call, deps=list(st.deps), template_of=parent, item=item, index=i
                )
    state.steps = expanded


def ready(state: RunState) -> list[str]:
    return [sid for sid, st in state.steps.items() if st.status == "pending" and not waiting_on(state, sid)]


def progress(state: RunState) -> dict[str, int]:
    real = [st for st in state.steps.values() if st.status != "expanded"]
    return {"done": sum(st.status in ("done", "skipped", "failed") for st in real), "total": len(real)}


def instruction(state: RunState, graph: Graph, templates: Templates, step_id: str, limits: Limits) -> dict[str, Any]:
    """The instruction for a ready step; its rendered input is fixed in the state the first time.

    Every other ready step gets its input rendered too: the client may run them in any order (e.g. the
    children of a `foreach`), and the observe middleware recognises a step's call only by that input."""
    for sid in dict.fromkeys([step_id, *ready(state)]):
        _render_input(state, graph, templates, sid)
    st = state.steps[step_id]
    step = graph.steps[st.template_of or step_id]
    capture = f"{step.capture_as}[{st.index}]" if step.capture_as and st.index is not None else step.capture_as
    schema = step.success_schema if isinstance(step.success_schema, str) or step.success_schema is None else "inline"
    ref = f'{{"workflow": "{state.workflow}", "run_id": "{state.run_id}", "step_id": "{step_id}"}}'
    if not observable(step.call):
        action = f"Do {step.call} yourself with `input`"
    else:
        action = f"Call {step.call} with exactly `input`"
    retry = None
    if st.error is not None and step.retry is not None:  # made again after a failure: say which attempt, and when
        retry = outcomes.retrying(st, step.retry, time.time())
        action = f"{outcomes.retry_line(step_id, retry)}: then call {step.call} again with exactly `input`"
    body: dict[str, Any] = {
        "workflow": state.workflow,
        "workflow_version": graph.workflow.version,
        "run_id": state.run_id,
        "state_hash": state_hash(state),
        "step_id": step_id,
        "call": step.call,
        "input": st.input,
        "capture_as": capture,
        "success_schema": schema,
        "rationale": step.rationale,
        "timeout_s": step.timeout_s,
        "context": _context(state, graph, step_id, limits),
        "progress": progress(state),
        "done": False,
        "next": f'{action}, then call think.next {ref[:-1]}, "result_snapshot": <compact result>}}.',
    }
    if retry is not None:
        body["retry"] = retry
    return with_seed_names(body, state)


def _render_input(state: RunState, graph: Graph, templates: Templates, step_id: str) -> None:
    st = state.steps[step_id]
    if st.input is None:
        step = graph.steps[st.template_of or step_id]
        where = f"{graph.workflow.source}: steps.{step.id}.input_template"
        st.input = templates.render(step.input_template or {}, variables(state, graph, st), where)


def _context(state: RunState, graph: Graph, step_id: str, limits: Limits) -> list[dict[str, Any]]:
    rules = graph.steps[state.steps[step_id].template_of or step_id].context
    if rules.mode == "none":
        return []
    outputs = {k: TaskOutput.model_validate(v) for k, v in state.captures.items() if not k.startswith("__")}
    outputs = {k: o for k, o in outputs.items() if not _named(k, o, rules.exclude)}
    if not outputs:
        return []
    producers = {k: v.step_id for k, v in outputs.items()}
    deps = {sid: list(st.deps) for sid, st in state.steps.items()}
    order = sorted(
        (sid for sid, st in state.steps.items() if st.completed_at is not None),
        key=lambda s: state.steps[s].completed_at or 0,
    )
    scores = relevance(step_id, deps, producers, order)
    template = state.steps[step_id].template_of or step_id
    reads = graph.reads[template]
    for key, output in outputs.items():
        base = key.split("[", 1)[0]
        if base in reads:  # the step's templates read it: as relevant as a direct dependency
            scores[key] = 1.0
        elif state.steps.get(output.step_id, None) is not None and state.steps[output.step_id].template_of == template:
            # A sibling of the same foreach is recent but never an input: no item reads another's output
            # (a foreach over 20 KB outputs would otherwise carry ~60 KB of siblings in every instruction).
            scores[key] = 0.0
    always = [k for name in rules.include for k, o in outputs.items() if _named(k, o, (name,))]
    if rules.mode == "manual":
        scores = {k: s for k, s in scores.items() if k in always}
    elif rules.min_relevance:
        scores = {k: s for k, s in scores.items() if s >= rules.min_relevance or k in always}
    if rules.max_bytes is not None:
        limits = replace(limits, max_context_bytes=rules.max_bytes)
    chosen = select(
        {k: outputs[k] for k in outputs if k in scores or k in always}, scores, limits, always=always, clock=state.clock
    )
    for key, output in outputs.items():  # select() records access times on the records it chose
        state.captures[key] = output.model_dump()
    return chosen


def _named(capture: str, output: TaskOutput, names: tuple[str, ...]) -> bool:
    """Whether `names` name the capture or the step producing it (a foreach child's by its parent's name too)."""
    ids = (capture, capture.split("[", 1)[0], output.step_id, output.step_id.split("[", 1)[0])
    return any(i in names for i in ids)
