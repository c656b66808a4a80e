"""The gateway's tasks on the client-facing SDK server, in both eras (`fronts.tasks.TaskRunner` runs them).

* 2025-11-25: a `tools/call` carrying `params.task` becomes a task, answered at once (`CreateTaskResult`);
  `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel` answer from the store.
* 2026-07-28 (the `io.modelcontextprotocol/tasks` extension): the server decides. A call of a client whose request
  declares the extension runs in the background; still running after `limits.task_after_s` it is answered with a
  task (`resultType: "task"`), else with its result as usual. `tasks/get` gives the task with its result inline
  once done, `tasks/cancel` and `tasks/update` acknowledge (the gateway's tasks never wait for input).

A call that may become a task outlives its request, so it runs without the request's client end: the client hears
no progress for it, and a server's sampling, elicitation or roots request during it is refused (for a 2026-era
client that declared the extension, this holds for every call it makes).

The calls are taken by a server middleware, before the SDK's per-version result check, which knows only
`CallToolResult` for `tools/call`. The `tasks/*` methods are not in the SDK's tables (types only): plain custom
handlers, each answering the era of its request.
"""

from collections.abc import Callable
from contextlib import suppress
from typing import Any

import mcp.types as types
from mcp import MCPError
from mcp.server.context import CallNext, HandlerResult
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from gateway.config.pipeline import LimitsConfig
from gateway.errors import GatewayError, to_mcp_error
from gateway.fronts.auth.callers import Caller
from gateway.fronts.eras import adapted
from gateway.fronts.server import Front
from gateway.fronts.tasks import TaskRunner, wire
from gateway.fronts.tasks_offer import declares
from gateway.sdk import RequestCtx
from gateway.store.tasks import TaskCaps, TaskRecords


def runner(front: Front, records: TaskRecords, limits: Callable[[], LimitsConfig]) -> TaskRunner:
    """A task runner whose calls go through `front`'s pipeline and whose status notices reach its clients, on the
    `limits` of the config in force: the caps per identity as each task starts (they apply on reload), the longest
    ttl and the heartbeat as the gateway starts (restart-only: `app.reloadable`)."""

    async def run(caller: Caller, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        # No connection: the client may be gone, so no one to ask.
        call = front.door.open(
            caller, "tools/call", {"name": name, "arguments": arguments}, version=None, meta=None, connection=None
        )
        result = await front.call_tool(call)
        assert isinstance(result, types.CallToolResult)  # input rounds are for 2026-era peers only
        return result

    async def tell(key: str, task: dict[str, Any]) -> None:
        connection = front.relay.connection(key)
        if connection is not None:
            with suppress(Exception):  # a connection closing meanwhile: the notice is optional
                await connection.notify("notifications/tasks/status", task)

    def caps() -> TaskCaps:
        now = limits()
        return TaskCaps(running=now.task_max_running, kept=now.task_max_kept)

    first = limits()
    return TaskRunner(
        records, run, tell, caps=caps, max_ttl_ms=int(first.task_max_ttl_s * 1000), heartbeat_s=first.task_heartbeat_s
    )


def _modern(ctx: RequestCtx) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def install(front: Front, tasks: TaskRunner, *, after_s: float) -> None:
    """Serve the gateway's tasks on `front`'s SDK server, and declare them (`after_s`: `limits.task_after_s`)."""
    server = front.server
    server.middleware.append(_TaskCalls(front, tasks, after_s))

    def owner(ctx: RequestCtx, *, era: bool | None = None) -> str:
        if era is not None and _modern(ctx) != era:  # a method of the other era's tasks
            raise MCPError(code=types.METHOD_NOT_FOUND, message="Method not found", data=ctx.method)
        return front.callers.of(ctx.request).identity.owner

    async def get(ctx: RequestCtx, params: types.GetTaskRequestParams) -> dict[str, Any]:
        return wire(await _mapped(tasks.get(owner(ctx), params.task_id)), modern=_modern(ctx))

    async def result(ctx: RequestCtx, params: types.GetTaskPayloadRequestParams) -> dict[str, Any]:
        found = await _mapped(tasks.result(owner(ctx, era=False), params.task_id))
        return adapted(types.CallToolResult.model_validate(found), ctx.protocol_version).model_dump(
            by_alias=True, mode="json", exclude_none=True
        )

    async def listing(ctx: RequestCtx, params: types.PaginatedRequestParams) -> dict[str, Any]:
        return {"tasks": await _mapped(tasks.list(owner(ctx, era=False)))}

    async def cancel(ctx: RequestCtx, params: types.CancelTaskRequestParams) -> dict[str, Any]:
        stored = await _mapped(tasks.cancel(owner(ctx), params.task_id))
        return {} if _modern(ctx) else wire(stored)  # the extension acknowledges with an empty result

    async def update(ctx: RequestCtx, params: types.GetTaskRequestParams) -> dict[str, Any]:
        await _mapped(tasks.get(owner(ctx, era=True), params.task_id))  # known, else "not found"
        return {}  # nothing to answer: the gateway's tasks ask for no input

    server.add_request_handler("tasks/get", types.GetTaskRequestParams, get)
    server.add_request_handler("tasks/result", types.GetTaskPayloadRequestParams, result)
    server.add_request_handler("tasks/list", types.PaginatedRequestParams, listing)
    server.add_request_handler("tasks/cancel", types.CancelTaskRequestParams, cancel)
    server.add_request_handler("tasks/update", types.GetTaskRequestParams, update)
    server.offers_tasks = True


async def _mapped(pending: Any) -> Any:
    """What `pending` gives, or its error as the client's."""
    try:
        return await pending
    except GatewayError as exc:
        raise to_mcp_error(exc) from exc


class _TaskCalls:
    """Takes the `tools/call`s that become (or may become) tasks."""

    def __init__(self, front: Front, tasks: TaskRunner, after_s: float) -> None:
        self.front = front
        self.tasks = tasks
        self.after_s = after_s

    async def __call__(self, ctx: RequestCtx, call_next: CallNext) -> HandlerResult:
        params = ctx.params
        if ctx.method != "tools/call" or not isinstance(params, dict):
            return await call_next(ctx)
        modern = _modern(ctx)
        if (params.get("task") is None) if not modern else not declares(params):
            return await call_next(ctx)
        call = types.CallToolRequestParams.model_validate(params, by_name=False)
        caller = self.front.callers.of(ctx.request)
        ttl = call.task.ttl if call.task is not None and not modern else None
        after_s = self.after_s if modern else None
        outcome = await _mapped(self.tasks.start(caller, call.name, call.arguments, ttl, after_s=after_s))
        if isinstance(outcome, types.CallToolResult):
            return outcome  # finished in time: the plain answer
        return {"resultType": "task", **wire(outcome, modern=True)} if modern else {"task": wire(outcome)}
