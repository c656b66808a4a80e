"""A server's task-only tool (`execution.taskSupport: "required"`, 2025-11-25 tasks) called like any other: the
gateway sends the call task-augmented, polls `tasks/get` at the interval the server suggests, relays each new
status message as progress, then fetches the result with `tasks/result` and answers it as the call's result.

So a client without tasks gets the final result of such a tool as a plain call, with progress; a task-capable
client's task (`fronts.tasks`) wraps the server's: the client sees the gateway's task id, owned by its identity
and kept in the store, and the server's id never leaves the replica that runs the call (the server's tasks are
its connection's, which no other replica shares). A call that is cancelled or times out cancels the server's task.
"""

import logging
from typing import Any

import anyio
import anyio.lowlevel
import mcp.types as types
from mcp import ClientSession, MCPError
from pydantic import ValidationError

from gateway import sdk
from gateway.downstreams.callers import CALL_RESULT, ToolAnswer
from gateway.store.base import TERMINAL
from gateway.types import ProgressFn

logger = logging.getLogger(__name__)

POLL_S = (0.01, 5.0)
"""The server's suggested polling interval is kept within these bounds (seconds); 1 s when it suggests none."""
CANCEL_S = 5.0
"""How long a cancelled call waits for the server to take its `tasks/cancel` (best effort)."""


def task_only(tools: list[types.Tool]) -> frozenset[str]:
    """The names of the tools a server runs only as tasks."""
    return frozenset(t.name for t in tools if t.execution is not None and t.execution.task_support == "required")


def offers_tasks(capabilities: types.ServerCapabilities | None) -> bool:
    """Whether a server accepts task-augmented `tools/call` (its 2025-11-25 capability)."""
    tasks = None if capabilities is None else capabilities.tasks
    return tasks is not None and tasks.requests is not None and tasks.requests.tools is not None


class TaskCaller:
    """Calls a task-only tool through the server's tasks (a `ToolCaller`, `downstreams.callers`)."""

    def __init__(self, session: ClientSession) -> None:
        self._session = session

    async def _send(self, method: str, params: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        request = types.Request[dict[str, Any], str](method=method, params=params)
        return await sdk.send_unvalidated(self._session, request, timeout_s=timeout_s)

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        timeout_s: float,
        progress: ProgressFn | None,
        extra: dict[str, Any] | None = None,
    ) -> ToolAnswer:
        params = {"name": name, "arguments": arguments, **(extra or {}), "task": {"ttl": int(timeout_s * 1000)}}
        with anyio.CancelScope(shield=True):  # a cancel meanwhile would orphan the server's task: it waits for its id
            created = await self._send("tools/call", params, timeout_s)
        task = types.CreateTaskResult.model_validate(created).task
        try:
            await anyio.lowlevel.checkpoint()  # a cancel that came while the task was being created applies here
            task = await self._followed(task, timeout_s, progress)
        except BaseException:
            with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_S):
                await self._cancel(task.task_id)
            raise
        if task.status == "cancelled":
            message = f"the server cancelled the task that ran the tool ({task.status_message or 'no reason given'})"
            raise MCPError(code=types.INTERNAL_ERROR, message=message)
        return CALL_RESULT.validate_python(await self._send("tasks/result", {"taskId": task.task_id}, timeout_s))

    async def _followed(self, task: types.Task, timeout_s: float, progress: ProgressFn | None) -> types.Task:
        """Poll the task until it ends (or needs input: `tasks/result` then carries the server's requests)."""
        told: tuple[str, str | None] | None = None
        steps = 0
        while task.status not in TERMINAL and task.status != "input_required":
            if progress is not None and (task.status, task.status_message) != told:
                told, steps = (task.status, task.status_message), steps + 1
                await progress(steps, None, task.status_message or task.status)
            interval = 1.0 if task.poll_interval is None else task.poll_interval / 1000
            await anyio.sleep(min(max(interval, POLL_S[0]), POLL_S[1]))
            task = types.GetTaskResult.model_validate(
                await self._send("tasks/get", {"taskId": task.task_id}, timeout_s)
            )
        return task

    async def _cancel(self, task_id: str) -> None:
        try:
            await self._send("tasks/cancel", {"taskId": task_id}, CANCEL_S)
        except (MCPError, ValidationError) as exc:  # the server may not cancel tasks: it finishes on its own
            logger.info("task %s of a cancelled call was not cancelled by its server: %s", task_id, exc)
