"""The client matrix's driver for the Python SDK 2.x (`mcp.Client`): `python py2.py PLAN.json` (see plan.py)."""

import os
import sys
from typing import Any

import anyio
import httpx2
import mcp.types as types
from mcp import Client, StdioServerParameters
from mcp.client.session import ClientRequestContext
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # the checkout
from tests.clients.plan import Step, emit, load, run_cases

PLAN = load()
WHO = str(PLAN.get("person", "ann"))


def dumped(result: Any) -> dict[str, Any]:
    return {"result": result.model_dump(by_alias=True, mode="json", exclude_none=True)}


async def sample(context: ClientRequestContext, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(role="assistant", content=types.TextContent(text=WHO), model="matrix")


async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"response": WHO})


async def main() -> None:
    target: Any
    if PLAN["transport"] == "stdio":
        target = StdioServerParameters(
            command=PLAN["command"], args=PLAN["args"], env=PLAN.get("env"), cwd=PLAN.get("cwd")
        )
    elif PLAN["transport"] == "http":
        http = httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300))
        target = streamable_http_client(PLAN["url"], http_client=http, max_sse_event_size=None)
    else:
        target = sse_client(PLAN["url"])
    client_info = types.Implementation(name="matrix-py2", version="2")
    async with Client(
        target,
        mode=PLAN.get("mode", "legacy"),
        sampling_callback=sample,
        elicitation_callback=elicit,
        client_info=client_info,
    ) as client:
        emit({"negotiated": client.protocol_version})

        async def operate(step: Step) -> dict[str, Any]:
            op = step["op"]
            if op == "tools":
                return {"names": [t.name for t in (await client.list_tools()).tools]}
            if op == "resources":
                return {"uris": [r.uri for r in (await client.list_resources()).resources]}
            if op == "prompts":
                return {"names": [p.name for p in (await client.list_prompts()).prompts]}
            if op == "read":
                return dumped(await client.read_resource(step["uri"]))
            if op == "prompt":
                return dumped(await client.get_prompt(step["name"], step.get("arguments")))
            heard: list[float] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                heard.append(progress)

            call = client.call_tool(step["tool"], step.get("arguments", {}), progress_callback=on_progress)
            if "cancel_after_ms" in step:
                with anyio.move_on_after(step["cancel_after_ms"] / 1000):
                    return {**dumped(await call), "cancelled": False}
                return {"cancelled": True}
            return {**dumped(await call), "progress": heard}

        await run_cases(PLAN, operate)


anyio.run(main)
