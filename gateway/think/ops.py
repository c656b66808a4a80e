"""The Think tools besides plan and next (explain, reset, state, validate, debug, listing) and workflow:// resources."""

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import yaml

from gateway.prompts import PromptNotFound
from gateway.think import runner
from gateway.think.context import TaskOutput, metrics
from gateway.think.engine import Engine
from gateway.think.errors import ThinkError
from gateway.think.listing import list_workflows
from gateway.think.state import snapshot_of

logger = logging.getLogger(__name__)

Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


def _text(args: dict[str, Any], key: str, *, required: bool = False) -> str | None:
    value = args.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise ThinkError("INVALID_PARAMS", f"`{key}` must be a non-empty string, got {value!r}", f"Pass `{key}`.")
    return value


class Operations:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def handlers(self) -> dict[str, Handler]:
        return {
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

    async def plan(self, args: dict[str, Any]) -> dict[str, Any]:
        params = args.get("params") or {}
        if not isinstance(params, dict):
            raise ThinkError("INVALID_PARAMS", f"params must be an object, got {type(params).__name__}", "Pass {}.")
        return await self.engine.plan(
            _text(args, "workflow", required=True) or "", params, _text(args, "run_id"), _text(args, "driver_version")
        )

    async def next(self, args: dict[str, Any]) -> dict[str, Any]:
        snapshot = args.get("result_snapshot")
        return await self.engine.next(
            _text(args, "workflow", required=True) or "",
            _text(args, "run_id"),
            _text(args, "step_id", required=True) or "",
            snapshot,
            force=bool(args.get("force", False)),
        )

    async def explain(self, args: dict[str, Any]) -> dict[str, Any]:
        workflow, step_id = _text(args, "workflow", required=True) or "", _text(args, "step_id")
        run_id = _text(args, "run_id")
        state = None
        if run_id is not None or await self.engine.store.latest_active(workflow) is not None:
            state = await self.engine.run_of(workflow, run_id)
        graph = await self.engine.graph(workflow, state.driver.get("version") if state else None)
        if step_id is None:
            if state is None:
                return {
                    "workflow": workflow,
                    "description": graph.workflow.description,
                    "steps": [
                        {"step_id": s, "call": graph.steps[s].call, "deps": list(d)} for s, d in graph.deps.items()
                    ],
                }
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
        }
        if state is not None and step_id in state.steps:
            st = state.steps[step_id]
            body.update(
                status=st.status, input=st.input, waiting_on=runner.waiting_on(state, step_id), reason=st.reason
            )
        return body

    async def reset(self, args: dict[str, Any]) -> dict[str, Any]:
        workflow, checkpoint = _text(args, "workflow", required=True) or "", _text(args, "checkpoint")
        state = await self.engine.run_of(workflow, _text(args, "run_id"))
        async with self.engine._lock(workflow, state.run_id):
            state = await self.engine.store.load(workflow, state.run_id)
            if checkpoint is None:
                if not args.get("force"):
                    raise ThinkError(
                        "RESET_NOT_ALLOWED",
                        f"clearing run {state.run_id} deletes its state",
                        "Pass force: true to clear it, or a checkpoint (a completed step id) to roll back.",
                    )
                await self.engine.store.delete(workflow, state.run_id)
                return {"ok": True, "cleared": state.run_id}
            found = next((c for c in reversed(state.checkpoints) if c.name == checkpoint), None)
            if found is None:
                names = ", ".join(c.name for c in state.checkpoints) or "none yet"
                raise ThinkError(
                    "CHECKPOINT_NOT_FOUND",
                    f"run {state.run_id} has no checkpoint {checkpoint!r}",
                    f"Checkpoints: {names}.",
                )
            runner.restore(state, found)
            state.log("reset", checkpoint)
            graph = await self.engine.graph(workflow, state.driver.get("version"))
            answer = self.engine._answer(state, graph, note=f"rolled back to after step {checkpoint}")
            await self.engine.store.save(state, expected_version=state.version)
            return {"ok": True, "instruction": answer}

    async def driver_prompt(self, args: dict[str, Any]) -> dict[str, Any]:
        try:
            prompt = self.engine.prompts.get(_text(args, "version"))
        except PromptNotFound as exc:
            raise ThinkError("PROMPT_NOT_FOUND", str(exc), "Omit version to get the current one.") from None
        return {"version": prompt.version, "hash": prompt.hash, "prompt_md": prompt.text}

    async def list(self, args: dict[str, Any]) -> dict[str, Any]:
        workflows, broken = self.engine.library.all()
        tags = args.get("tags")
        body = list_workflows(
            workflows,
            filter=_text(args, "filter"),
            tags=tags if isinstance(tags, list) else None,
            mode=args.get("mode"),
            detailed=args.get("detailed"),
        )
        if broken:
            body["invalid"] = [e.body() for e in broken]
        return body

    async def read(self, args: dict[str, Any]) -> dict[str, Any]:
        path, text = self.engine.library.raw(_text(args, "workflow", required=True) or "")
        if args.get("format", "yaml") == "parsed":
            return {"workflow": path.stem, "parsed": yaml.safe_load(text)}
        return {"workflow": path.stem, "workflow_yaml": text}

    async def state_get(self, args: dict[str, Any]) -> dict[str, Any]:
        state = await self.engine.run_of(_text(args, "workflow", required=True) or "", _text(args, "run_id"))
        outputs = {k: TaskOutput.model_validate(v) for k, v in state.captures.items()}
        return {"state": snapshot_of(state), "progress": runner.progress(state), "metrics": metrics(outputs)}

    async def state_list(self, args: dict[str, Any]) -> dict[str, Any]:
        workflow = _text(args, "workflow", required=True) or ""
        runs = [
            {"run_id": s.run_id, "status": s.status, "progress": runner.progress(s), "updated": s.updated}
            for s in await self.engine.store.runs(workflow)
        ]
        return {"workflow": workflow, "runs": runs}

    async def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        schema = _text(args, "schema")
        if schema is not None:
            errors = self.engine.schemas.errors(schema, args.get("response"))
            return {"valid": not errors, "errors": errors}
        workflow = _text(args, "workflow", required=True) or ""
        try:
            await self.engine.graph(workflow)
        except ThinkError as exc:  # every problem found, each with file, path and fix (one when there is no list)
            return {"valid": False, "errors": exc.extra.get("diagnostics") or [exc.body()]}
        return {"valid": True, "errors": []}

    async def debug(self, args: dict[str, Any]) -> dict[str, Any]:
        state = await self.engine.run_of(
            _text(args, "workflow", required=True) or "", _text(args, "run_id", required=True)
        )
        body: dict[str, Any] = {
            "history": [h.model_dump(exclude_none=True) for h in state.history],
            "checkpoints": [c.name for c in state.checkpoints],
        }
        since = _text(args, "from_step")
        if since is not None:
            base = next((c for c in state.checkpoints if c.name == since), None)
            if base is None:
                raise ThinkError("CHECKPOINT_NOT_FOUND", f"no checkpoint {since!r}", "Use a completed step id.")
            body["diff"] = {
                sid: {"from": base.statuses.get(sid), "to": st.status}
                for sid, st in state.steps.items()
                if base.statuses.get(sid) != st.status
            }
        return body
