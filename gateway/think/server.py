"""Think's MCP face: the `think` server (plan, next, ... as in-process tools) and the `prompt` server (`say`)."""

import json
import logging
import time
from typing import Any

import mcp.types as types
from mcp.server import Server

from gateway import telemetry
from gateway.hosted import inprocess
from gateway.hosted.contracts import Arguments, ArgumentsError
from gateway.hosted.inprocess import Hosted, Refusals
from gateway.hosted.prompts import PromptNotFound
from gateway.session import Origin
from gateway.store.base import StoreUnavailable
from gateway.telemetry.repeats import Repeating
from gateway.think import resources, tools
from gateway.think.driven import DrivenRuns
from gateway.think.engine import Engine
from gateway.think.errors import ThinkError
from gateway.think.ops import Handler, Operations
from gateway.think.tools import PROMPT_TOOLS, THINK_TOOLS

logger = logging.getLogger(__name__)
repeats = Repeating(logger)


Handlers = dict[str, tuple[type[Arguments], Handler]]
UNOWNED = {
    "error": "INVALID_PARAMS",
    "details": "the call carries no caller identity: Think is reached through the gateway's front only",
    "guidance": "Call the tool through the gateway (a client session), not on the in-process server directly.",
}


def _ok(body: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(body, ensure_ascii=False, default=str))], structured_content=body
    )


def _failed(body: dict[str, Any]) -> types.CallToolResult:
    # The model must see the failure as data: an isError result, never a protocol error.
    return types.CallToolResult(content=[types.TextContent(text=json.dumps(body, ensure_ascii=False))], is_error=True)


def _refusals(known: list[str]) -> Refusals:
    def unknown(tool: str) -> types.CallToolResult:
        return _failed(
            {"error": "UNKNOWN_TOOL", "details": f"no tool {tool!r}", "guidance": f"Use {', '.join(known)}."}
        )

    def invalid(exc: ArgumentsError) -> types.CallToolResult:
        logger.info("%s: %s", exc.tool, exc)
        return _failed({"error": "INVALID_PARAMS", "details": exc.problems, "guidance": exc.guidance})

    return Refusals(unknown, invalid)


def _answered(name: str, tool: str, handler: Handler, slow_ms: int, driven: DrivenRuns | None) -> inprocess.Handler:
    """`handler` for the builder: a call that names nobody reaches no run; Think's own failures are answered as
    data (an isError result with error, details and guidance), never as a protocol error. `driven`: where plan
    and next note the run their session drives (`think.driven`)."""

    async def answer(origin: Origin, args: Arguments) -> types.CallToolResult:
        owner = origin.owner
        if owner is None:  # every run is someone's: a call that names nobody reaches none
            return _failed(UNOWNED)
        telemetry.annotate(
            **{
                "think.workflow": getattr(args, "workflow", None),
                "think.run_id": getattr(args, "run_id", None),
                "think.step_id": getattr(args, "step_id", None),
            }
        )
        started = time.perf_counter()
        try:
            body = await handler(owner, args)
            workflow, run_id = body.get("workflow"), body.get("run_id")
            if driven is not None and origin.session and isinstance(workflow, str) and isinstance(run_id, str):
                driven.note(origin.session, workflow, run_id, bool(body.get("done")))
            return _ok(body)
        except ThinkError as exc:
            logger.info("think %s failed: %s", tool, exc.error_code)
            return _failed(exc.body())
        except StoreUnavailable as exc:  # Redis down or restarting: nothing was changed, the call may be retried
            repeats.warning("think %s: %s", tool, exc)
            return _failed(
                {"error": "STORE_UNAVAILABLE", "details": str(exc), "guidance": "Retry the same call shortly."}
            )
        except PromptNotFound as exc:  # plan's driver_version (or the workflow's) names no prompt: not internal
            guidance = "Omit driver_version (or fix the workflow's) to use the current driver prompt."
            return _failed({"error": "PROMPT_NOT_FOUND", "details": str(exc), "guidance": guidance})
        finally:
            took = (time.perf_counter() - started) * 1000
            if slow_ms and took >= slow_ms:
                logger.warning("%s.%s took %.0f ms (over think.slow_call_ms %d)", name, tool, took, slow_ms)
            else:
                logger.debug("%s.%s took %.1f ms", name, tool, took)

    return answer


DRIVING = frozenset({"plan", "next"})
"""The tools whose answer says which run the calling session now drives."""


def _server(
    name: str,
    listed: list[types.Tool],
    handlers: Handlers,
    resources: Any = None,
    slow_ms: int = 0,
    driven: DrivenRuns | None = None,
) -> Server[Any]:
    tools = [
        Hosted(
            t,
            handlers[t.name][0],
            _answered(name, t.name, handlers[t.name][1], slow_ms, driven if t.name in DRIVING else None),
        )
        for t in listed
    ]
    return inprocess.build(name, tools, _refusals(list(handlers)), handlers=resources)


def build(engine: Engine) -> tuple[Server[Any], Server[Any]]:
    """The `think` and `prompt` in-process servers (exposed as `think.plan`, ..., and `prompt.say`)."""
    ops = Operations(engine)
    think = _server(
        "think", THINK_TOOLS, ops.handlers(), resources.handlers(engine.library), engine.slow_call_ms, engine.driven
    )

    async def say(owner: str, args: tools.Say) -> dict[str, Any]:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return {"message": args.text, "display": True, "timestamp": stamp}

    prompt = _server("prompt", PROMPT_TOOLS, {"say": (tools.Say, say)}, slow_ms=engine.slow_call_ms)
    return think, prompt
