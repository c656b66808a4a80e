"""The Think engine: plan, next, observe, explain, reset over workflows, the run state machine and the store."""

import json
import logging
import secrets
from typing import Any

from gateway.hosted.prompts import PromptLibrary
from gateway.think import checks, runner
from gateway.think.context import Limits
from gateway.think.driven import DrivenRuns
from gateway.think.errors import ThinkError, diagnosed
from gateway.think.format import check_name
from gateway.think.graph import Graph
from gateway.think.graphs import Graphs, KnownTools
from gateway.think.library import Library
from gateway.think.observed import unwrapped
from gateway.think.params import check_params
from gateway.think.payloads import Payloads
from gateway.think.ready import digest
from gateway.think.runs import Runs, no_spill, spilled
from gateway.think.spills import PINNED_TEXT
from gateway.think.state import RunState, StateStore
from gateway.think.templates import Templates
from gateway.think.transitions import Seen, Transitions, lazy
from gateway.think.validator import Schemas
from gateway.think.workflow import Workflow

logger = logging.getLogger(__name__)


def pin(state: RunState, workflow: Workflow) -> None:
    """Pin `state` to `workflow`: its content hash in the state, its text in the run's spills (written once)."""
    state.workflow_hash = workflow.digest
    state.spills.keep(PINNED_TEXT, json.dumps(workflow.text).encode(), workflow.text)


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
        self.graphs = Graphs(library, prompts, self.templates, self.limits, known_tools)
        self.graph = self.graphs.get
        self.transitions = Transitions(self.graphs, schemas, self.payloads)
        self.runs = Runs(store, self.graph_of)
        self.driven = DrivenRuns()

    async def graph_of(self, state: RunState) -> Graph:
        """The graph `state` follows: of the workflow version it was planned with (`workflow_hash`), read from the
        text stored with the run when the file has changed (or gone) since; the file as it is for older runs."""
        version = state.driver.get("version")
        try:
            current: Workflow | None = self.library.get(state.workflow)
        except ThinkError:
            current = None  # edited into something broken, or deleted: the run still has its own version
        if state.workflow_hash and (current is None or current.digest != state.workflow_hash):
            await self.runs.whole(state, [PINNED_TEXT])
            text = state.spills.values.get(PINNED_TEXT)
            if isinstance(text, str):
                source = current.source if current is not None else f"{state.workflow} (as planned)"
                return await self.graphs.get(state.workflow, version, self.library.pinned(state.workflow, text, source))
            logger.warning("run %s/%s: its workflow text is gone; following the file", state.workflow, state.run_id)
        return await self.graph(state.workflow, version)

    async def run_of(self, owner: str, workflow: str, run_id: str | None) -> RunState:
        """The owner's named run, or their latest active run of the workflow when no id is given."""
        if run_id is None:
            return await self.runs.latest(owner, workflow)
        return await self.runs.load(owner, workflow, run_id)

    async def _existing(self, owner: str, workflow: str, run_id: str, graph: Graph) -> dict[str, Any]:
        """plan is idempotent for a run_id: the run's current instruction, noted as an existing run's."""
        state = await self.runs.load(owner, workflow, run_id, whole=True)
        return self.transitions.answer(state, graph, note=EXISTING)

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
                return self.transitions.answer(
                    await self.runs.load(owner, workflow, run_id, whole=True), graph, note=EXISTING
                )
            driver = self.prompts.get(driver_version or graph.workflow.driver_version)
            state = RunState(
                owner=owner,
                workflow=workflow,
                run_id=run_id,
                workflow_hash=graph.workflow.digest,
                params=values,
                driver={"version": driver.version, "hash": driver.hash},
                steps=runner.new_steps(graph),
            )
            self.runs.attach(state)
            pin(state, graph.workflow)
            state.log("plan")
            runner.advance(state, graph, self.templates)
            answer = self.transitions.answer(state, graph)
            pinned = graph.workflow.driver_version
            if pinned and driver.version == pinned and pinned != self.prompts.current:
                answer["driver_warning"] = (
                    f"{graph.workflow.source} pins driver_version {pinned!r}; the current driver is "
                    f"{self.prompts.current!r}. The run follows {pinned!r}: update driver_version in the workflow "
                    "(or plan with driver_version) to use the current one."
                )
            if not await self.runs.create(state):  # planned meanwhile by a writer sharing no lock with us
                return self.transitions.answer(
                    await self.runs.load(owner, workflow, run_id, whole=True), graph, note=EXISTING
                )
            return answer

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
        parallel: bool = False,
    ) -> dict[str, Any]:
        # One read of the run per call: a named run is read by the update itself (UNKNOWN_RUN when it is not there).
        run = run_id if run_id is not None else (await self.runs.latest(owner, workflow)).run_id

        def wants(state: RunState, graph: Graph) -> list[str]:
            """The spilled captures (templates read them) and this step's spilled observation, unless it is
            taken lazily and captured by no name (so no later template can read it)."""
            st, seen = state.steps.get(step_id), state.observed.get(step_id)
            if st is None or seen is None or not seen.truncated:
                return spilled(state, observations=False)
            template = graph.steps[st.template_of or step_id]
            skip = lazy(seen, result, template) and not template.capture_as
            return spilled(state, observations=False) + ([] if skip else [step_id])

        return await self.runs.update(
            owner,
            workflow,
            run,
            lambda state, graph: (
                self.transitions.record(state, graph, step_id, result, force, state_hash, parallel=parallel),
                True,
            ),
            wants,
        )

    # -- observe (the gateway saw the client make a step's call) ----------------------------------

    async def observe(
        self,
        owner: str,
        workflow: str,
        run_id: str,
        tool: str,
        arguments: Any,
        result: Any,
        failure: str | None = None,
    ) -> Seen | None:
        """Record `result`, or the `failure` the call answered (a tool error, a server error, a timeout), for the
        ready step of the owner's run whose call is `tool` with exactly `arguments`; returns the step and what to
        tell the client. Touches the store only when the run waits for that call (see `Runs.watches`)."""
        if not await self.runs.watches(owner, workflow, run_id, tool, arguments):
            return None
        result, wanted = unwrapped(result), digest(arguments or {})

        def record(state: RunState, graph: Graph) -> tuple[Seen | None, bool]:
            return self.transitions.observed(state, graph, tool, wanted, result, failure)

        return await self.runs.update(owner, workflow, run_id, record, no_spill)
