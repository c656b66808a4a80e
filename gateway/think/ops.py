"""The Think tools besides plan and next (explain, state, validate, debug, listing) and workflow:// resources;
think.reset is `gateway.think.resets`, inherited."""

import logging
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Any

from gateway.hosted.contracts import Arguments, summary
from gateway.hosted.prompts import PromptNotFound
from gateway.think import checks, retention, runner, tools
from gateway.think.context import TaskOutput, metrics
from gateway.think.engine import Engine
from gateway.think.errors import ThinkError
from gateway.think.library import parsed
from gateway.think.listing import list_workflows
from gateway.think.resets import Resets
from gateway.think.runs import spilled
from gateway.think.seednames import seed_state
from gateway.think.state import RunState
from gateway.think.views import graph_view, replay, snapshot_of

logger = logging.getLogger(__name__)

MIGRATE = "The file changed since this run was planned; think.reset {migrate: true} moves the run to it."

Handler = Callable[[str, Any], Awaitable[dict[str, Any]]]
"""Takes the caller's owner key (`Identity.owner`: whose runs it reaches) and the tool's arguments model
(`gateway.think.tools`), already checked by the server."""


class Operations(Resets):
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def handlers(self) -> dict[str, tuple[type[Arguments], Handler]]:
        handlers: dict[str, Handler] = {
            "plan": self.plan,
            "next": self.next,
            "explain": self.explain,
            "reset": self.reset,
            "driver_prompt": self.driver_prompt,
            "workflows.list": self.list,
            "workflows.read": self.read,
            "state.get": self.state_get,
            "state.list": self.state_list,
            "validate": self.validate,
            "debug": self.debug,
        }
        return {name: (tools.CONTRACTS[name][1], handler) for name, handler in handlers.items()}

    async def plan(self, owner: str, args: tools.Plan) -> dict[str, Any]:
        return await self.engine.plan(owner, args.workflow, args.params or {}, args.run_id, args.driver_version)

    async def next(self, owner: str, args: tools.Next) -> dict[str, Any]:
        return await self.engine.next(
            owner,
            args.workflow,
            args.run_id,
            args.step_id,
            args.result_snapshot,
            force=args.force,
            state_hash=args.state_hash,
            parallel=args.parallel,
        )

    async def explain(self, owner: str, args: tools.Explain) -> dict[str, Any]:
        workflow, step_id, run_id = args.workflow, args.step_id, args.run_id
        state = None
        if run_id is not None or await self.engine.store.latest_active(owner, workflow) is not None:
            state = await self.engine.run_of(owner, workflow, run_id)
        graph = await (self.engine.graph_of(state) if state else self.engine.graph(workflow))
        if step_id is None:
            if state is None or args.view == "graph":
                return graph_view(graph)
            statuses = {sid: st.status for sid, st in state.steps.items()}
            return {
                "workflow": workflow,
                "run_id": state.run_id,
                "status": state.status,
                "progress": runner.progress(state),
                "ready": runner.ready(state),
                "steps": statuses,
            }
        template = state.steps[step_id].template_of if state and step_id in state.steps else step_id
        step = graph.steps.get(template or step_id)
        if step is None:
            raise ThinkError("UNKNOWN_STEP", f"{workflow} has no step {step_id!r}", f"Steps: {', '.join(graph.steps)}.")
        schema = step.success_schema
        body: dict[str, Any] = {
            "step_id": step_id,
            "call": step.call,
            "rationale": step.rationale,
            "depends_on": list(graph.deps[step.id]),
            "success_schema": schema,
            "schema": self.engine.schemas.get(schema) if isinstance(schema, str) else schema,
            "when": step.when,
            "foreach": step.foreach,
            "capture_as": step.capture_as,
            "retry": asdict(step.retry) if step.retry else None,
            "continue_on_error": step.continue_on_error,
        }
        if state is not None and step_id in state.steps:
            st = state.steps[step_id]
            body.update(
                status=st.status, input=st.input, waiting_on=runner.waiting_on(state, step_id), reason=st.reason
            )
        return body

    async def driver_prompt(self, owner: str, args: tools.DriverPrompt) -> dict[str, Any]:
        try:
            prompt = self.engine.prompts.get(args.version)
        except PromptNotFound as exc:
            raise ThinkError("PROMPT_NOT_FOUND", str(exc), "Omit version to get the current one.") from None
        return {"version": prompt.version, "hash": prompt.hash, "prompt_md": prompt.text}

    async def list(self, owner: str, args: tools.ListWorkflows) -> dict[str, Any]:
        workflows, broken = self.engine.library.loaded()
        return list_workflows(
            workflows, filter=args.filter, tags=args.tags, mode=args.mode, detailed=args.detailed, invalid_files=broken
        )

    async def read(self, owner: str, args: tools.ReadWorkflow) -> dict[str, Any]:
        path, text = self.engine.library.raw(args.workflow)
        if args.format == "parsed":
            return {"workflow": path.stem, "parsed": parsed(path, text)}
        return {"workflow": path.stem, "workflow_yaml": text}

    async def state_get(self, owner: str, args: tools.RunOf) -> dict[str, Any]:
        state = await self.engine.run_of(owner, args.workflow, args.run_id)
        outputs = {k: TaskOutput.model_validate(v) for k, v in state.captures.items()}
        snapshot = snapshot_of(state)
        snapshot["vars"] = seed_state(state, "")["vars"]  # seed 003's name for the captures
        snapshot["workflow_pin"] = await self._pin(state)
        return {"state": snapshot, "progress": runner.progress(state), "metrics": metrics(outputs)}

    async def _pin(self, state: RunState) -> dict[str, Any]:
        """Which version of its workflow the run follows, and whether the file has a newer one."""
        followed = (await self.engine.graph_of(state)).workflow
        try:
            current: str | None = self.engine.library.get(state.workflow).digest
        except ThinkError:
            current = None
        newer = bool(state.workflow_hash) and current is not None and current != state.workflow_hash
        pin = {"version": followed.version, "hash": state.workflow_hash or None, "current_hash": current}
        return {**pin, "newer_exists": newer, **({"migrate": MIGRATE} if newer else {})}

    async def state_list(self, owner: str, args: tools.Runs) -> dict[str, Any]:
        workflow = args.workflow
        runs = [
            {"run_id": s.run_id, "status": s.status, "progress": runner.progress(s), "updated": s.updated}
            for s in await self.engine.store.runs(owner, workflow)
        ]
        return {"workflow": workflow, "runs": runs}

    async def validate(self, owner: str, args: tools.Validate) -> dict[str, Any]:
        engine = self.engine
        if args.schema_ is not None:  # the seed's {schema, response}; without a response, the schema itself
            try:
                found = engine.schemas.errors(args.schema_, args.response) if args.response is not None else []
                engine.schemas.checked(args.schema_)
            except ThinkError as exc:
                return {
                    "valid": False,
                    "errors": [{"path": "(schema)", "message": exc.details, "guidance": exc.guidance}],
                }
            return {"valid": not found, "errors": found}
        if args.workflow is None:
            raise ThinkError(
                "INVALID_PARAMS",
                "think.validate needs `workflow` (to check a workflow) or `schema` and `response` (to check a result)",
                summary("think.validate", tools.Validate),
            )
        errors: list[dict[str, Any]] = []
        try:
            await engine.graph(args.workflow)
        except ThinkError as exc:  # every problem found, each with file, path and fix (one when there is no list)
            errors = exc.extra.get("diagnostics") or [exc.body()]
        try:
            workflow = engine.library.get(args.workflow)
        except ThinkError:
            return {"valid": False, "errors": errors}
        more = checks.schema_problems(workflow, engine.schemas) + checks.undeclared_params(workflow, engine.templates)
        more += checks.context_problems(workflow)
        body: dict[str, Any] = {"valid": not errors and not more, "errors": errors + [asdict(d) for d in more]}
        warnings = checks.over_ceiling(workflow, engine.limits.max_snapshot_bytes)
        if warnings:
            body["warnings"] = warnings
        return body

    async def debug(self, owner: str, args: tools.Debug) -> dict[str, Any]:
        state = await self.engine.run_of(owner, args.workflow, args.run_id)
        if args.action == "replay":
            graph = await self.engine.graph_of(state)
            # the templates read the whole values: of the captures kept, and of those evicted to the spill store
            await self.engine.runs.whole(
                state, [*spilled(state, observations=False), *retention.evicted(state, graph).values()]
            )
            report = replay(state, graph, self.engine.templates, self.engine.graphs.limits(graph))
            current = await self.engine.graph(args.workflow, state.driver.get("version"))
            if current.workflow.digest != graph.workflow.digest:  # the file changed since: what migrating would change
                report["current_file"] = replay(
                    state, current, self.engine.templates, self.engine.graphs.limits(current)
                )
            return report
        if args.action == "diff" and args.from_step is None:
            names = ", ".join(c.name for c in state.checkpoints) or "none yet"
            raise ThinkError("INVALID_PARAMS", "action diff needs from_step", f"Pass from_step, one of: {names}.")
        body: dict[str, Any] = {
            "history": [h.model_dump(exclude_none=True) for h in state.history],
            "checkpoints": [c.name for c in state.checkpoints],
        }
        if state.checkpoint_chunks:
            body["checkpoints_spilled"] = state.checkpoint_chunks * retention.CHUNK
        since = args.from_step
        if since is not None:
            if retention.find_checkpoint(state, since) is None:
                await self.engine.runs.whole(state, retention.chunk_ids(state))
            found = retention.find_checkpoint(state, since)
            if found is None:
                raise ThinkError("CHECKPOINT_NOT_FOUND", f"no checkpoint {since!r}", "Use a completed step id.")
            base = found[0]
            body["diff"] = {
                sid: {"from": base.statuses.get(sid), "to": st.status}
                for sid, st in state.steps.items()
                if base.statuses.get(sid) != st.status
            }
        return body
