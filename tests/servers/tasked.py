"""Test server (stdio) that runs a tool as a task, speaking 2025-11-25 experimental tasks itself (the SDK has their
types only): `job` is task-only (`execution.taskSupport: required`; a plain call gets -32601, as the spec says),
answered with a `CreateTaskResult`, its steps told in `statusMessage` through `tasks/get`, its result by
`tasks/result`. Each step ends only after a `tasks/get` has reported it, so a poller sees every step (no timing).
On a 2026-07-28 connection `job` follows the `io.modelcontextprotocol/tasks` extension instead: a call whose
request declares it is answered `resultType: "task"` and `tasks/get` carries the result inline; one that does not
gets -32021 (missing required client capability), as the extension says.
`hold` waits until `release` names the same key (a call that stays in flight as long as a test wants); `big`
returns `n` characters. Every tool call is written to `--events-file` as `call <tool> <task|plain>`, every
`tasks/cancel` as `cancel <task id>`.
"""

import argparse
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import mcp.types as types
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.stdio import stdio_server
from mcp_types import CLIENT_CAPABILITIES_META_KEY, MISSING_REQUIRED_CLIENT_CAPABILITY

Ctx = ServerRequestContext[Any]
EXTENSION = "io.modelcontextprotocol/tasks"
MODERN = "2026-07-28"
OBJ: dict[str, Any] = {"type": "object", "properties": {}}
KEY = {"type": "object", "properties": {"key": {"type": "string"}}}
TOOLS = [
    types.Tool(
        name="job",
        description="A task-only job of `steps` steps.",
        input_schema={"type": "object", "properties": {"steps": {"type": "integer"}}},
        execution=types.ToolExecution(task_support="required"),
    ),
    types.Tool(name="hold", description="Wait until `release` names the same key.", input_schema=KEY),
    types.Tool(name="release", description="End the `hold` call of this key.", input_schema=KEY),
    types.Tool(
        name="big", description="Return n characters.", input_schema={"type": "object", "properties": {"n": {}}}
    ),
]


def now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def text(value: str, *, error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}], **({"isError": True} if error else {})}


@dataclass(eq=False)
class Job:
    task: dict[str, Any]
    steps: int
    seen: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    result: dict[str, Any] | None = None


class TaskedServer(Server[Any]):
    def get_capabilities(self, *args: Any, **kwargs: Any) -> types.ServerCapabilities:
        if kwargs.get("protocol_version") == MODERN:
            return super().get_capabilities(*args, **kwargs).model_copy(update={"extensions": {EXTENSION: {}}})
        calls = types.ServerTasksRequestsCapability(tools=types.TasksToolsCapability(call=types.TasksCallCapability()))
        tasks = types.ServerTasksCapability(list=types.TasksListCapability(), requests=calls)
        return super().get_capabilities(*args, **kwargs).model_copy(update={"tasks": tasks})


class Tasked:
    def __init__(self, events: Path | None) -> None:
        self.events = events
        self.jobs: dict[str, Job] = {}
        self.holds: dict[str, anyio.Event] = {}
        self.tg: anyio.abc.TaskGroup | None = None
        self.server = TaskedServer("tasked", version="1.0", on_list_tools=self.list_tools, on_call_tool=self.call)
        self.server.middleware.append(self.task_calls)
        self.server.add_request_handler("tasks/get", types.GetTaskRequestParams, self.get)
        self.server.add_request_handler("tasks/result", types.GetTaskPayloadRequestParams, self.result)
        self.server.add_request_handler("tasks/list", types.PaginatedRequestParams, self.listing)
        self.server.add_request_handler("tasks/cancel", types.CancelTaskRequestParams, self.cancel)

    def event(self, line: str) -> None:
        if self.events is not None:
            with self.events.open("a", encoding="utf-8") as f:
                f.write(line + "\n")

    async def list_tools(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call(self, ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        self.event(f"call {params.name} plain")
        arguments = params.arguments or {}
        if params.name == "job":
            raise MCPError(code=types.METHOD_NOT_FOUND, message="tool 'job' must be called as a task")
        if params.name == "hold":
            await self.holds.setdefault(str(arguments.get("key")), anyio.Event()).wait()
            return types.CallToolResult.model_validate(text(f"held {arguments.get('key')} released"))
        if params.name == "release":
            self.holds.setdefault(str(arguments.get("key")), anyio.Event()).set()
            return types.CallToolResult.model_validate(text("released"))
        if params.name == "big":
            return types.CallToolResult.model_validate(text("x" * int(arguments.get("n", 10))))
        raise MCPError(code=types.INVALID_PARAMS, message=f"unknown tool {params.name}")

    async def task_calls(self, ctx: Ctx, call_next: CallNext) -> HandlerResult:
        params = ctx.params
        if ctx.protocol_version == MODERN and ctx.method == "tools/call" and isinstance(params, Mapping):
            return await self.modern_call(ctx, params, call_next)
        if ctx.method != "tools/call" or not isinstance(params, Mapping) or params.get("task") is None:
            return await call_next(ctx)
        self.event(f"call {params['name']} task")
        if params["name"] != "job":
            raise MCPError(code=types.METHOD_NOT_FOUND, message=f"tool {params['name']!r} does not run as a task")
        stamp = now()
        task: dict[str, Any] = {"taskId": secrets.token_hex(8), "status": "working", "createdAt": stamp}
        task["lastUpdatedAt"] = stamp
        task |= {"ttl": params["task"].get("ttl") or 60_000, "pollInterval": 10}
        job = self.jobs[task["taskId"]] = Job(task, int((params.get("arguments") or {}).get("steps", 3)))
        assert self.tg is not None
        self.tg.start_soon(self.run, job)
        return {"task": dict(task)}

    async def modern_call(self, ctx: Ctx, params: Mapping[str, Any], call_next: CallNext) -> HandlerResult:
        if params.get("name") != "job":
            return await call_next(ctx)
        declared = (params.get("_meta") or {}).get(CLIENT_CAPABILITIES_META_KEY) or {}
        if EXTENSION not in (declared.get("extensions") or {}):
            self.event("call job plain")
            required: dict[str, Any] = {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}
            raise MCPError(MISSING_REQUIRED_CLIENT_CAPABILITY, "Missing required client capability", data=required)
        self.event("call job task")
        stamp = now()
        task: dict[str, Any] = {"taskId": secrets.token_hex(8), "status": "working", "createdAt": stamp}
        task |= {"lastUpdatedAt": stamp, "ttlMs": 60_000, "pollIntervalMs": 10}
        job = self.jobs[task["taskId"]] = Job(task, int((params.get("arguments") or {}).get("steps", 3)))
        assert self.tg is not None
        self.tg.start_soon(self.run, job)
        return {"resultType": "task", **task}

    async def run(self, job: Job) -> None:
        for step in range(1, job.steps + 1):
            job.seen = anyio.Event()
            job.task |= {"statusMessage": f"step {step} of {job.steps}", "lastUpdatedAt": now()}
            await job.seen.wait()  # a poller has read this step
            if job.task["status"] == "cancelled":
                return
        job.result = text(f"job done after {job.steps} steps")
        job.task |= {"status": "completed", "statusMessage": "done", "lastUpdatedAt": now()}
        job.done.set()

    def job(self, task_id: str) -> Job:
        job = self.jobs.get(task_id)
        if job is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"no task {task_id}")
        return job

    async def get(self, ctx: Ctx, params: types.GetTaskRequestParams) -> dict[str, Any]:
        job = self.job(params.task_id)
        answer = dict(job.task)
        if ctx.protocol_version == MODERN and job.result is not None:
            answer["result"] = job.result  # the extension's DetailedTask
        job.seen.set()
        return answer

    async def result(self, ctx: Ctx, params: types.GetTaskPayloadRequestParams) -> dict[str, Any]:
        job = self.job(params.task_id)
        await job.done.wait()
        assert job.result is not None
        related = {"io.modelcontextprotocol/related-task": {"taskId": params.task_id}}
        return {**job.result, "_meta": related}

    async def cancel(self, ctx: Ctx, params: types.CancelTaskRequestParams) -> dict[str, Any]:
        job = self.job(params.task_id)
        self.event(f"cancel {params.task_id}")
        job.task |= {"status": "cancelled", "statusMessage": "cancelled by the client", "lastUpdatedAt": now()}
        job.seen.set()
        return dict(job.task)

    async def listing(self, ctx: Ctx, params: types.PaginatedRequestParams) -> dict[str, Any]:
        return {"tasks": [dict(job.task) for job in self.jobs.values()]}


async def serve(tasked: Tasked) -> None:
    async with stdio_server() as (read, write), anyio.create_task_group() as tg:
        tasked.tg = tg
        await tasked.server.run(read, write, tasked.server.create_initialization_options())
        tg.cancel_scope.cancel()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events-file", type=Path)
    args = parser.parse_args()
    anyio.run(serve, Tasked(args.events_file))


if __name__ == "__main__":
    main()
