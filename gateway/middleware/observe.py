"""Observe: when a client makes the call a Think step waits for, record the real result for that step."""

import logging
from typing import Self

import mcp.types as types

from gateway import telemetry
from gateway.config import GatewayConfig
from gateway.errors import DownstreamError, DownstreamTimeout, DownstreamUnavailable
from gateway.pipeline import Call, Middleware
from gateway.results import Hint, result_view
from gateway.store.base import StoreUnavailable
from gateway.telemetry.repeats import Repeating
from gateway.think.engine import Engine
from gateway.think.errors import ThinkError

logger = logging.getLogger(__name__)
repeats = Repeating(logger)


class Observe(Middleware):
    """Tracks the Think runs each session plans, and records observed step results (DESIGN §8.5)."""

    name = "observe"

    @classmethod
    def from_config(cls, config: GatewayConfig, *, engine: Engine) -> Self:
        return cls(engine, separator=config.namespace.separator)

    def __init__(self, engine: Engine, *, separator: str = ".") -> None:
        self.engine = engine
        self.plan_tool = f"think{separator}plan"
        self.next_tool = f"think{separator}next"

    async def on_response(self, call: Call) -> None:
        result = call.result
        failure = _failure(call)
        if failure is None and (call.error is not None or not isinstance(result, types.CallToolResult)):
            return
        # Steps name tools by reference (`server.tool`); the exposure middleware notes it for every call.
        reference = call.reference
        name = reference or call.name
        if name in (("think.plan", "think.next") if reference else (self.plan_tool, self.next_tool)):
            if failure is None:  # a refused plan or next changed no run
                await self._track(call)
            return
        arguments, owner = call.params.get("arguments"), call.session.identity.owner
        for workflow, (run_id, version) in (await call.session.runs()).items():
            try:
                # From memory: a call no ready step waits for costs a dict look-up, not a read of the run
                # (read again when another replica saved a newer version than the one indexed here).
                if not await self.engine.runs.watches(owner, workflow, run_id, name, arguments, version):
                    continue
                view = result_view(result) if isinstance(result, types.CallToolResult) else None
                seen = await self.engine.observe(owner, workflow, run_id, name, arguments, view, failure)
            except ThinkError as exc:
                # A run that is gone (reset or cleared) is forgotten; one that could not store this result
                # (e.g. nested too deeply) stays tracked: its next steps can still be observed.
                if exc.error_code == "UNKNOWN_RUN":
                    await call.session.track(workflow, None)
                logger.info("observe %s/%s: %s", workflow, run_id, exc.error_code)
                continue
            except StoreUnavailable as exc:  # the call itself succeeded: it is answered, just not recorded
                repeats.warning("observe %s/%s: not recorded: %s", workflow, run_id, exc)
                continue
            if seen is None:
                continue
            step = seen.step_id
            telemetry.event(
                "gateway.observe", **{"think.workflow": workflow, "think.run_id": run_id, "think.step_id": step}
            )
            ref = f'{{"workflow": "{workflow}", "run_id": "{run_id}", "step_id": "{step}"}}'
            recorded = (
                f"Step `{step}` of run {run_id} recorded by the gateway. "
                f"Next: think.next {ref} — result_snapshot may be omitted."
            )
            call.hints.append(Hint("observe", seen.note or recorded))
            return

    async def _track(self, call: Call) -> None:
        """The runs this session's plan or next calls drive, as Think noted them (`think.driven`)."""
        for run in self.engine.driven.take(call.session.key):
            if run.done:
                await call.session.track(run.workflow, None)
            elif call.session.active_runs.get(run.workflow) != run.run_id:  # most think.next answers: noted already
                await call.session.track(run.workflow, run.run_id)


def _failure(call: Call) -> str | None:
    """What went wrong with a call that reached its downstream (a tool error result, a server error, a timeout),
    in a line; None for a call that succeeded, or never left the gateway (a refusal is no step's attempt)."""
    error = call.error
    if isinstance(error, DownstreamError):
        kind = (
            "timeout"
            if isinstance(error, DownstreamTimeout)
            else "server unavailable"
            if isinstance(error, DownstreamUnavailable)
            else "server error"
        )
        return f"{kind}: {error}"
    result = call.result
    if call.error is None and isinstance(result, types.CallToolResult) and result.is_error:
        text = " ".join(b.text for b in result.content if isinstance(b, types.TextContent)).strip()
        return f"tool error: {text or '(no text)'}"
    return None
