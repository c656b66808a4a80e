"""The Think engine: plan, next, observe, explain, reset over workflows, the run state machine and the store."""

import json
import logging
import secrets
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Any, Literal

from pydantic_core import to_json

from gateway.hosted.prompts import PromptLibrary
from gateway.think import checks, runner
from gateway.think.context import Limits, capped, make_output
from gateway.think.errors import ThinkError, diagnosed
from gateway.think.graph import Graph, build, inject_driver, observable
from gateway.think.library import Library
from gateway.think.observed import bounded, captured, unwrapped, whole
from gateway.think.params import check_params
from gateway.think.payloads import Payloads
from gateway.think.ready import digest
from gateway.think.retention import retain
from gateway.think.runs import Runs, no_spill, spilled
from gateway.think.state import Observation, RunState, StateStore
from gateway.think.templates import Templates
from gateway.think.validator import Schemas
from gateway.think.workflow import Step, Workflow, check_name

logger = logging.getLogger(__name__)

KnownTools = Callable[[], Awaitable[frozenset[str]]]
GRAPHS = 256
"""Checked graphs kept (per workflow and driver version), least recently used dropped first."""


EXISTING = "existing run: plan is idempotent for a run_id"


class Engine:
    def __init__(
        self,
        library: Library,
        store: StateStore,
        prompts: PromptLibrary,
        *,
        schemas: Schemas,
        limits: Limits | None = None,
        payloads: Payloads | None = None,
        known_tools: KnownTools | None = None,
        slow_call_ms: int = 0,
    ) -> None:
        self.library, self.store, self.prompts, self.schemas = library, store, prompts, schemas
        self.limits, self.payloads, self.known_tools = limits or Limits(), payloads or Payloads(), known_tools
        self.slow_call_ms = slow_call_ms
        """A Think tool call taking longer is logged as a warning (seed 003's SLOW_THRESHOLD_MS); 0: never."""
        self.templates = Templates()
        self.runs = Runs(store, self.graph)
        self._graphs: OrderedDict[tuple[str, str], tuple[Workflow, frozenset[str] | None, Graph]] = OrderedDict()

    async def graph(self, workflow: str, driver_version: str | None = None) -> Graph:
        """The checked graph; rebuilt only when the file, the driver version or the tool catalog changed."""
        wf = self.library.get(workflow)  # the same object while the file is unchanged
        version = driver_version or wf.driver_version or self.prompts.current
        known = frozenset(await self.known_tools()) if self.known_tools is not None else None
        cached = self._graphs.get((workflow, version))
        if cached is not None and cached[0] is wf and (cached[1] is known or cached[1] == known):
            self._graphs[workflow, version] = (wf, known, cached[2])  # the same tools: next time by identity
            self._graphs.move_to_end((workflow, version))
            return cached[2]
        graph = build(inject_driver(wf, version), self.templates, known)
        for warning in checks.over_ceiling(wf, self.limits.max_snapshot_bytes):
            logger.warning("%s: %s: %s", warning["file"], warning["path"], warning["message"])
        self._graphs[workflow, version] = (wf, known, graph)
        while len(self._graphs) > GRAPHS:
            self._graphs.popitem(last=False)
        return graph

    def _limits(self, graph: Graph, step_id: str | None = None, state: RunState | None = None) -> Limits:
        """Gateway defaults, then the workflow's `limits`, then the step's; the deployment's max_snapshot_bytes is a
        ceiling (seed: "configurable per deployment"): a workflow or step may lower it, never raise it."""
        step_limits: dict[str, Any] = {}
        if step_id is not None and state is not None:
            step_limits = graph.steps[state.steps[step_id].template_of or step_id].limits
        merged = Limits.merged(asdict(self.limits), graph.workflow.limits, step_limits)
        return capped(merged, self.limits.max_snapshot_bytes)

    async def run_of(self, owner: str, workflow: str, run_id: str | None) -> RunState:
        """The owner's named run, or their latest active run of the workflow when no id is given."""
        if run_id is None:
            return await self.runs.latest(owner, workflow)
        return await self.runs.load(owner, workflow, run_id)

    # -- plan ------------------------------------------------------------------------------------

    async def plan(
        self,
        owner: str,
        workflow: str,
        params: dict[str, Any] | None,
        run_id: str | None = None,
        driver_version: str | None = None,
    ) -> dict[str, Any]:
        """Start a run of `workflow` for `owner` (whose it is: only they reach it), or answer for theirs `run_id`."""
        graph = await self.graph(workflow, driver_version)
        values = check_params(graph.workflow, params or {})
        # A step no run could pass (a variable nothing gives, a schema that is not there) fails now, all at once.
        problems = checks.unresolved(graph, self.templates, values)
        problems += checks.schema_problems(graph.workflow, self.schemas) + checks.context_problems(graph.workflow)
        if problems:
            raise diagnosed(problems)
        run_id = check_name("run", run_id) if run_id else secrets.token_hex(6)
        async with self.runs.held(owner, workflow, run_id):
            if await self.store.exists(owner, workflow, run_id):  # idempotent for a given run_id
                return self._answer(await self.runs.load(owner, workflow, run_id, whole=True), graph, note=EXISTING)
            driver = self.prompts.get(driver_version or graph.workflow.driver_version)
            state = RunState(
                owner=owner,
                workflow=workflow,
                run_id=run_id,
                params=values,
                driver={"version": driver.version, "hash": driver.hash},
                steps=runner.new_steps(graph),
            )
            self.runs.attach(state)
            state.log("plan")
            runner.advance(state, graph, self.templates)
            answer = self._answer(state, graph)
            if not await self.runs.create(state):  # planned meanwhile by a writer sharing no lock with us
                return self._answer(await self.runs.load(owner, workflow, run_id, whole=True), graph, note=EXISTING)
            return answer

    def _answer(self, state: RunState, graph: Graph, note: str | None = None) -> dict[str, Any]:
        ready = runner.ready(state)
        if not ready:
            state.status = "done"
            return self._summary(state, graph)
        body = runner.instruction(state, graph, self.templates, ready[0], self._limits(graph, ready[0], state))
        if note:
            body["note"] = note
        return body

    def _summary(self, state: RunState, graph: Graph) -> dict[str, Any]:
        done = [s for s, st in state.steps.items() if st.status == "done"]
        skipped = [s for s, st in state.steps.items() if st.status == "skipped"]
        artifacts: Any = sorted(k for k in state.captures if not k.startswith("__"))
        if graph.workflow.outputs:
            where = f"{graph.workflow.source}: outputs"
            artifacts = self.templates.render(graph.workflow.outputs, runner.variables(state, graph), where)
        return {
            "workflow": state.workflow,
            "run_id": state.run_id,
            "done": True,
            "summary": f"Workflow {state.workflow} finished: {len(done)} steps done, {len(skipped)} skipped.",
            "artifacts": artifacts,
            "progress": runner.progress(state),
            "next": "Report the summary and artifacts to the user. No further think.next calls are needed.",
        }

    # -- next ------------------------------------------------------------------------------------

    async def next(
        self,
        owner: str,
        workflow: str,
        run_id: str | None,
        step_id: str,
        result: Any = None,
        *,
        force: bool = False,
        state_hash: str | None = None,
    ) -> dict[str, Any]:
        run = (await self.run_of(owner, workflow, run_id)).run_id

        def wants(state: RunState, graph: Graph) -> list[str]:
            """The spilled captures (templates read them) and this step's spilled observation, unless it is
            taken lazily and captured by no name (so no later template can read it)."""
            st, seen = state.steps.get(step_id), state.observed.get(step_id)
            if st is None or seen is None or not seen.truncated:
                return spilled(state, observations=False)
            template = graph.steps[st.template_of or step_id]
            skip = _lazy(seen, result, template) and not template.capture_as
            return spilled(state, observations=False) + ([] if skip else [step_id])

        return await self.runs.update(
            owner,
            workflow,
            run,
            lambda state, graph: (self._record(state, graph, step_id, result, force, state_hash), True),
            wants,
        )

    def _record(
        self, state: RunState, graph: Graph, step_id: str, result: Any, force: bool, state_hash: str | None
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
        lazy = _lazy(observed, result, template)
        used: Any = result
        source: Literal["observed", "reported"] = "reported"
        mismatch: list[str] = []
        if observed is not None:
            used, source = (None if lazy else whole(observed, step_id, state.spills)), "observed"
            mismatch = _contradictions(result, used) if result is not None else []
        elif result is None:
            if st.status == "done" and st.source == "observed":  # a retry; the observation went into the capture
                return self._answer(state, graph, note=f"step {step_id} was already recorded (duplicate ignored)")
            raise ThinkError(
                "INVALID_PARAMS",
                f"result_snapshot is missing for step {step_id!r} and the gateway did not observe its call",
                "Send result_snapshot, or make the step's call through the "
                "gateway with exactly the instruction's input.",
            )
        hashed = observed.hash if observed is not None else digest(used)
        current = runner.state_hash(state)
        if state_hash is not None and state_hash != current and not (st.status == "done" and st.result_hash == hashed):
            raise ThinkError(
                "STATE_CONFLICT",
                f"state_hash {state_hash!r} is stale: run {state.run_id} is at {current} (steps were recorded since)",
                f"Ready now: {', '.join(runner.ready(state)) or 'nothing'}; think.explain shows the run. Answer the "
                "latest instruction, with its state_hash.",
            )
        if st.status == "done":
            if st.result_hash == hashed:
                return self._answer(state, graph, note=f"step {step_id} was already recorded (duplicate ignored)")
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
        limits = self._limits(graph, step_id, state)
        hint = None
        if source == "reported":
            used, hint = self.payloads.guard(state, step_id, used, limits)
        if template.success_schema is not None:
            self.schemas.check(template.success_schema, used, step_id)
        if template.capture_as:
            key = template.capture_as if st.index is None else f"{template.capture_as}[{st.index}]"
            if lazy and observed is not None:
                output = captured(observed, step_id, key, limits, clock=state.clock)
            else:
                output = make_output(step_id, key, used, limits, state.spills, source=source, clock=state.clock)
            state.captures[key] = output.model_dump()
        state.clock += 1
        st.status, st.result_hash, st.source, st.completed_at = "done", hashed, source, state.clock
        state.observed.pop(step_id, None)  # the capture holds it now, bounded (spilled when cut): not MBs per save
        state.checkpoints.append(runner.checkpoint(state, step_id))
        state.log("next", step_id, observed.bytes if observed is not None else len(to_json(used)), source)
        runner.advance(state, graph, self.templates)
        retain(state, graph, self._limits(graph))
        answer = self._answer(state, graph)
        if observed is not None:
            answer["observation"] = {"used": "observed", "mismatch": mismatch} if mismatch else {"used": "observed"}
        if hint is not None:
            answer["payload_warning"] = hint
        return answer

    # -- observe (the gateway saw the client make a step's call) ----------------------------------

    async def observe(
        self, owner: str, workflow: str, run_id: str, tool: str, arguments: Any, result: Any
    ) -> str | None:
        """Record `result` for the ready step of the owner's run whose call is `tool` with exactly `arguments`;
        returns its id. Touches the store only when the run waits for that call (see `Runs.watches`)."""
        if not await self.runs.watches(owner, workflow, run_id, tool, arguments):
            return None
        result, wanted = unwrapped(result), digest(arguments or {})

        def record(state: RunState, graph: Graph) -> tuple[str | None, bool]:
            for sid in runner.ready(state):
                st = state.steps[sid]
                # A local.* step never passes through the gateway: its result is what the client reports.
                if not observable(st.call) or st.call != tool or st.input is None or digest(st.input) != wanted:
                    continue
                template = graph.steps[st.template_of or sid]
                if st.call == "prompt.say" and template.success_schema is not None:
                    if self.schemas.errors(template.success_schema, result):
                        continue  # the step asks for a report (e.g. a review), not the acknowledgement
                limits = self._limits(graph, sid, state)
                state.observed[sid] = observation = bounded(sid, result, limits, state.spills)
                state.log("observe", sid, observation.bytes, "spilled" if observation.truncated else None)
                return sid, True
            return None, False  # not (or no longer) ready in the stored state: nothing to record

        return await self.runs.update(owner, workflow, run_id, record, no_spill)


def _lazy(observed: Observation | None, result: Any, template: Step) -> bool:
    """A spilled observation nothing needs to read whole (no schema, no snapshot to compare) is captured as it
    is stored: a 100 MB result is not read back, parsed and spilled again."""
    return observed is not None and observed.truncated and result is None and template.success_schema is None


def _contradictions(reported: Any, observed: Any) -> list[str]:
    """Keys the client's snapshot states differently from what the gateway saw (both must be objects)."""
    if not isinstance(reported, dict) or not isinstance(observed, dict):
        return [] if json.dumps(reported, sort_keys=True) == json.dumps(observed, sort_keys=True) else ["(value)"]
    return sorted(k for k in reported if k in observed and reported[k] != observed[k])
