"""The client matrix's driver for the Python SDK 1.x (`mcp.ClientSession` on a transport context manager):
`python py1.py PLAN.json` (see plan.py). Elicitation is declared only by the versions that have it (>= 1.10)."""

import inspect
import os
import sys
from contextlib import AsyncExitStack
from datetime import timedelta
from typing import Any

import anyio
import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client import sse, stdio, streamable_http
from pydantic import AnyUrl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plan import Step, emit, load, run_cases

PLAN = load()
WHO = str(PLAN.get("person", "ann"))


def dumped(result: Any) -> dict[str, Any]:
    return {"result": result.model_dump(by_alias=True, mode="json", exclude_none=True)}


async def sample(ctx: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text=WHO), model="matrix")


async def elicit(ctx: Any, params: Any) -> Any:
    return types.ElicitResult(action="accept", content={"response": WHO})  # type: ignore[attr-defined]


async def main() -> None:
    async with AsyncExitStack() as stack:
        if PLAN["transport"] == "stdio":
            params = StdioServerParameters(
                command=PLAN["command"], args=PLAN["args"], env=PLAN.get("env"), cwd=PLAN.get("cwd")
            )
            read, write = await stack.enter_async_context(stdio.stdio_client(params))
        elif PLAN["transport"] == "http":
            read, write, _ = await stack.enter_async_context(
                streamable_http.streamablehttp_client(PLAN["url"], sse_read_timeout=300)
            )
        else:
            read, write = await stack.enter_async_context(sse.sse_client(PLAN["url"], sse_read_timeout=300))
        callbacks: dict[str, Any] = {"sampling_callback": sample}
        accepted = inspect.signature(ClientSession.__init__).parameters
        if "elicitation_callback" in accepted:
            callbacks["elicitation_callback"] = elicit
        if "client_info" in accepted:
            callbacks["client_info"] = types.Implementation(name="matrix-py1", version="1")
        session = await stack.enter_async_context(ClientSession(read, write, **callbacks))
        init = await session.initialize()
        emit({"negotiated": init.protocolVersion, "elicitation": "elicitation_callback" in callbacks})

        async def operate(step: Step) -> dict[str, Any]:
            op = step["op"]
            if op == "tools":
                return {"names": [t.name for t in (await session.list_tools()).tools]}
            if op == "resources":
                return {"uris": [str(r.uri) for r in (await session.list_resources()).resources]}
            if op == "prompts":
                return {"names": [p.name for p in (await session.list_prompts()).prompts]}
            if op == "read":
                return dumped(await session.read_resource(AnyUrl(step["uri"])))
            if op == "prompt":
                return dumped(await session.get_prompt(step["name"], step.get("arguments")))
            progress: list[float] = []

            async def on_progress(done: float, total: float | None, message: str | None = None) -> None:
                progress.append(done)

            call = session.call_tool(
                step["tool"], step.get("arguments", {}), timedelta(seconds=120), progress_callback=on_progress
            )
            if "cancel_after_ms" in step:
                with anyio.move_on_after(step["cancel_after_ms"] / 1000):
                    return {**dumped(await call), "cancelled": False}
                return {"cancelled": True}
            return {**dumped(await call), "progress": progress}

        await run_cases(PLAN, operate)


anyio.run(main)
