"""The gateway's tasks on the client-facing SDK server: a task-augmented `tools/call` becomes a task
(`fronts.tasks.TaskRunner`), and `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel` answer from the store.

The task-augmented call is taken by a server middleware, before the SDK's per-version result check: that check
knows only `CallToolResult` for `tools/call` at 2025-11-25, and the answer here is a `CreateTaskResult`. The
`tasks/*` methods are not in the SDK's spec tables (types only), so they are plain custom handlers. Both serve
handshake-era connections only; a 2026-era request for them is "method not found", as before.
"""

from collections.abc import Mapping
from contextlib import suppress
from typing import Any

import mcp.types as types
from mcp import MCPError
from mcp.server.context import CallNext, HandlerResult
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from gateway.downstreams.peer import Peer
from gateway.errors import GatewayError, to_mcp_error
from gateway.fronts.auth.callers import Caller
from gateway.fronts.eras import adapted
from gateway.fronts.server import Front
from gateway.fronts.tasks import TaskRunner, wire
from gateway.store.base import TaskRecords
from gateway.types import RequestCtx


def runner(front: Front, records: TaskRecords) -> TaskRunner:
    """A task runner whose calls go through `front`'s pipeline and whose status notices reach its clients."""

    async def run(caller: Caller, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        nobody = Peer(caller.key, None, None, None, modern=False)  # the client may be gone: no one to ask
        result = await front.call_tool(caller, name, arguments, nobody)
        assert isinstance(result, types.CallToolResult)  # input rounds are for 2026-era peers only
        return result

    async def tell(key: str, task: dict[str, Any]) -> None:
        connection = front.relay.connection(key)
        if connection is not None:
            with suppress(Exception):  # a connection closing meanwhile: the notice is optional
                await connection.notify("notifications/tasks/status", task)

    return TaskRunner(records, run, tell)


def install(front: Front, tasks: TaskRunner) -> None:
    """Serve the gateway's tasks on `front`'s SDK server, and declare them to handshake-era clients."""
    server = front.server
    server.middleware.append(_TaskCalls(front, tasks))

    def owner(ctx: RequestCtx) -> str:
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            raise MCPError(code=types.METHOD_NOT_FOUND, message="Method not found", data=ctx.method)
        return front.callers.of(ctx.request).identity.owner

    async def get(ctx: RequestCtx, params: types.GetTaskRequestParams) -> dict[str, Any]:
        found: dict[str, Any] = await _mapped(tasks.get(owner(ctx), params.task_id), as_task=True)
        return found

    async def result(ctx: RequestCtx, params: types.GetTaskPayloadRequestParams) -> dict[str, Any]:
        found = await _mapped(tasks.result(owner(ctx), params.task_id))
        return adapted(types.CallToolResult.model_validate(found), ctx.protocol_version).model_dump(
            by_alias=True, mode="json", exclude_none=True
        )

    async def listing(ctx: RequestCtx, params: types.PaginatedRequestParams) -> dict[str, Any]:
        return {"tasks": await _mapped(tasks.list(owner(ctx)))}

    async def cancel(ctx: RequestCtx, params: types.CancelTaskRequestParams) -> dict[str, Any]:
        cancelled: dict[str, Any] = await _mapped(tasks.cancel(owner(ctx), params.task_id))
        return cancelled

    server.add_request_handler("tasks/get", types.GetTaskRequestParams, get)
    server.add_request_handler("tasks/result", types.GetTaskPayloadRequestParams, result)
    server.add_request_handler("tasks/list", types.PaginatedRequestParams, listing)
    server.add_request_handler("tasks/cancel", types.CancelTaskRequestParams, cancel)
    front.server.offers_tasks = True


async def _mapped(pending: Any, *, as_task: bool = False) -> Any:
    """What `pending` gives (a record reduced to its wire `Task` when `as_task`), or its error as the client's."""
    try:
        found = await pending
    except GatewayError as exc:
        raise to_mcp_error(exc) from exc
    return wire(found) if as_task else found


class _TaskCalls:
    """Takes a handshake-era `tools/call` that carries `params.task`: it becomes a task, answered at once."""

    def __init__(self, front: Front, tasks: TaskRunner) -> None:
        self.front = front
        self.tasks = tasks

    async def __call__(self, ctx: RequestCtx, call_next: CallNext) -> HandlerResult:
        params = ctx.params
        if (
            ctx.method != "tools/call"
            or not isinstance(params, Mapping)
            or params.get("task") is None
            or ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        ):
            return await call_next(ctx)
        call = types.CallToolRequestParams.model_validate(params, by_name=False)
        caller = self.front.callers.of(ctx.request)
        ttl = call.task.ttl if call.task is not None else None
        task = await _mapped(self.tasks.start(caller, call.name, call.arguments, ttl))
        return {"task": task}
