"""The transitions of a loaded run: the instruction or summary it answers, a step's result recorded (`next`), a
call the gateway saw recorded against the ready step it answers (`observe`). Pure work on a `RunState`: the
engine loads, locks and saves around it."""

import json
import time
from dataclasses import dataclass
from typing import Any, Literal

from pydantic_core import to_json

from gateway.think import checkpoints, failures, retention, runner, statehash
from gateway.think.context import make_output
from gateway.think.errors import ThinkError
from gateway.think.graph import Graph
from gateway.think.graphs import Graphs
from gateway.think.observed import bounded, captured, whole
from gateway.think.payloads import Payloads
from gateway.think.ready import digest
from gateway.think.state import Observation, RunState
from gateway.think.validator import Schemas
from gateway.think.workflow import Step, observable


@dataclass(frozen=True, slots=True)
class Seen:
    """A call the gateway saw for a step: its id, and what to tell the client when it is not the plain
    "recorded" (a failed attempt, or a call made before its retry time)."""

    step_id: str
    note: str | None


class Transitions:
    def __init__(self, graphs: Graphs, schemas: Schemas, payloads: Payloads) -> None:
        self.graphs, self.templates, self.schemas, self.payloads = graphs, graphs.templates, schemas, payloads

    def answer(
        self, state: RunState, graph: Graph, note: str | None = None, parallel: bool = False, first: str | None = None
    ) -> dict[str, Any]:
        """The next instruction (the first ready step, or `first` when it is ready), or the summary; `parallel`:
        with `instructions`, one for each ready step (at most statehash.PARALLEL), which the client may run at
        once and reports one by one."""
        ready = runner.ready(state)
        if not ready:
            return self._summary(state, graph)
        if first in ready:
            ready = [first, *(s for s in ready if s != first)]
        body = runner.instruction(state, graph, self.templates, ready[0], self.graphs.limits(graph, ready[0], state))
        if note:
            body["note"] = note
        if parallel:
            more = [
                runner.instruction(state, graph, self.templates, sid, self.graphs.limits(graph, sid, state))
                for sid in ready[1 : statehash.PARALLEL]
            ]
            body["instructions"] = [dict(body), *more]
            if len(ready) > statehash.PARALLEL:
                body["more_ready"] = len(ready) - statehash.PARALLEL
        return body

    def _summary(self, state: RunState, graph: Graph) -> dict[str, Any]:
        done = [s for s, st in state.steps.items() if st.status == "done"]
        skipped = [s for s, st in state.steps.items() if st.status == "skipped"]
        results = retention.where_kept(state, graph)
        artifacts: Any = list(results)
        if graph.workflow.outputs:
            where = f"{graph.workflow.source}: outputs"
            artifacts = self.templates.render(graph.workflow.outputs, runner.variables(state, graph), where)
        failed = failures.summary(state, graph)
        counts = f"{len(done)} steps done, {len(skipped)} skipped" + (
            f", {len(failed['failed'])} failed" if "failed" in failed else ""
        )
        return {
            "workflow": state.workflow,
            "workflow_version": graph.workflow.version,
            "run_id": state.run_id,
            "state_hash": statehash.state_hash(state),
            "done": True,
            "summary": f"Workflow {state.workflow} {'failed' if state.status == 'failed' else 'finished'}: {counts}.",
            "artifacts": artifacts,
            "results": results,
            "progress": runner.progress(state),
            "next": "Report the summary and artifacts to the user. No further think.next calls are needed.",
            **failed,
        }

    def record(
        self,
        state: RunState,
        graph: Graph,
        step_id: str,
        result: Any,
        force: bool,
        state_hash: str | None,
        *,
        parallel: bool = False,
    ) -> dict[str, Any]:
        st = state.steps.get(step_id)
        if st is None:
            raise ThinkError(
                "UNKNOWN_STEP",
                f"run {state.run_id} has no step {step_id!r}",
                f"Ready now: {', '.join(runner.ready(state)) or 'nothing (the run is done)'}.",
            )
        observed = state.observed.get(step_id)
        if observed is not None and result is not None and st.call == "prompt.say":
            observed = None  # the gateway saw the text shown; what the client reports is the step's outcome
        template = graph.steps[st.template_of or step_id]
        if observed is None and st.error is not None and st.status in ("pending", "failed"):
            if result is None:  # the gateway saw the last attempt fail: say what happens now
                note = failures.status_line(state, graph, step_id)
                return self.answer(state, graph, note=note, parallel=parallel, first=step_id)
            failures.not_before(state, graph, step_id, time.time())
        taken_lazily = lazy(observed, result, template)
        used: Any = result
        source: Literal["observed", "reported"] = "reported"
        mismatch: list[str] = []
        if observed is not None:
            used, source = (None if taken_lazily else whole(observed, step_id, state.spills)), "observed"
            mismatch = _contradictions(result, used) if result is not None else []
        elif result is None:
            if st.status == "done" and st.source == "observed":  # a retry; the observation went into the capture
                return self.answer(
                    state, graph, note=f"step {step_id} was already recorded (duplicate ignored)", parallel=parallel
                )
            raise ThinkError(
                "INVALID_PARAMS",
                f"result_snapshot is missing for step {step_id!r} and the gateway did not observe its call",
                "Send result_snapshot, or make the step's call through the "
                "gateway with exactly the instruction's input.",
            )
        hashed = observed.hash if observed is not None else digest(used)
        current = statehash.state_hash(state)
        if (
            state_hash is not None
            and state_hash != current
            and not (st.status == "done" and st.result_hash == hashed)
            and not statehash.ready_at(state, step_id, state_hash)
        ):
            raise ThinkError(
                "STATE_CONFLICT",
                f"state_hash {state_hash!r} is stale: run {state.run_id} is at {current} (steps were recorded since)",
                f"Ready now: {', '.join(runner.ready(state)) or 'nothing'}; think.explain shows the run. Answer the "
                "latest instruction, with its state_hash.",
            )
        if st.status == "done":
            if st.result_hash == hashed:
                return self.answer(
                    state, graph, note=f"step {step_id} was already recorded (duplicate ignored)", parallel=parallel
                )
            if not force:
                raise ThinkError(
                    "STEP_ALREADY_COMPLETED",
                    f"step {step_id!r} is already done with another result",
                    "Continue with the current instruction, or pass force: true to replace the result.",
                )
        elif st.status != "pending" or runner.waiting_on(state, step_id):
            why = f"waits for {runner.waiting_on(state, step_id)}" if st.status == "pending" else f"is {st.status}"
            raise ThinkError(
                "STEP_NOT_READY",
                f"step {step_id!r} {why}",
                f"Ready now: {', '.join(runner.ready(state)) or 'nothing'}; follow the last instruction.",
            )
        limits = self.graphs.limits(graph, step_id, state)
        hint = None
        if source == "reported":
            used, hint = self.payloads.guard(state, step_id, used, limits)
        if template.success_schema is not None:
            self.schemas.check(template.success_schema, used, step_id)
        if template.capture_as:
            key = template.capture_as if st.index is None else f"{template.capture_as}[{st.index}]"
            if taken_lazily and observed is not None:
                output = captured(observed, step_id, key, limits, clock=state.clock)
            else:
                output = make_output(step_id, key, used, limits, state.spills, source=source, clock=state.clock)
            state.captures[key] = output.model_dump()
        state.clock += 1
        st.status, st.result_hash, st.source, st.completed_at = "done", hashed, source, state.clock
        st.error = st.not_before = None
        state.observed.pop(step_id, None)  # the capture holds it now, bounded (spilled when cut): not MBs per save
        state.checkpoints.append(checkpoints.checkpoint(state, step_id))
        state.log("next", step_id, observed.bytes if observed is not None else len(to_json(used)), source)
        runner.advance(state, graph, self.templates)
        retention.retain(state, graph, self.graphs.limits(graph))
        answer = self.answer(state, graph, parallel=parallel)
        if observed is not None:
            answer["observation"] = {"used": "observed", "mismatch": mismatch} if mismatch else {"used": "observed"}
        if hint is not None:
            answer["payload_warning"] = hint
        return answer

    def observed(
        self, state: RunState, graph: Graph, tool: str, wanted: str, result: Any, failure: str | None = None
    ) -> tuple[Seen | None, bool]:
        """Record `result` (or the `failure` the call answered) for the ready step whose call is `tool` with
        arguments digesting to `wanted`: the step and what to tell the client, and whether the state changed."""
        for sid in runner.ready(state):
            st = state.steps[sid]
            # A local.* step never passes through the gateway: its result is what the client reports.
            if not observable(st.call) or st.call != tool or st.input is None or digest(st.input) != wanted:
                continue
            template = graph.steps[st.template_of or sid]
            if failure is None and st.call == "prompt.say" and template.success_schema is not None:
                if self.schemas.errors(template.success_schema, result):
                    continue  # the step asks for a report (e.g. a review), not the acknowledgement
            now = time.time()
            too_early = failures.early(state, graph, sid, now)
            if too_early is not None:
                return Seen(sid, too_early), False
            if failure is not None:
                return Seen(sid, failures.fail(state, graph, self.templates, sid, failure, now)), True
            limits = self.graphs.limits(graph, sid, state)
            state.observed[sid] = observation = bounded(sid, result, limits, state.spills)
            state.log("observe", sid, observation.bytes, "spilled" if observation.truncated else None)
            return Seen(sid, None), True
        return None, False  # not (or no longer) ready in the stored state: nothing to record


def lazy(observed: Observation | None, result: Any, template: Step) -> bool:
    """A spilled observation nothing needs to read whole (no schema, no snapshot to compare) is captured as it
    is stored: a 100 MB result is not read back, parsed and spilled again."""
    return observed is not None and observed.truncated and result is None and template.success_schema is None


def _contradictions(reported: Any, observed: Any) -> list[str]:
    """Keys the client's snapshot states differently from what the gateway saw (both must be objects)."""
    if not isinstance(reported, dict) or not isinstance(observed, dict):
        return [] if json.dumps(reported, sort_keys=True) == json.dumps(observed, sort_keys=True) else ["(value)"]
    return sorted(k for k in reported if k in observed and reported[k] != observed[k])
