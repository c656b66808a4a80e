"""A server's task-only tool called like any other, in both eras.

2025-11-25 (`execution.taskSupport: "required"`): the gateway sends the call task-augmented, polls `tasks/get` at
the interval the server suggests, relays each new status message as progress, then fetches the result with
`tasks/result` and answers it as the call's result. 2026-07-28 (the `io.modelcontextprotocol/tasks` extension,
where the server decides): the gateway declares no extension on its calls, so such a server refuses a call it
would only run as a task (-32021, naming the extension); that call alone is sent again declaring it, and the
task it gets is polled with `tasks/get` (the result comes inline) the same way (`ModernTasks`).

So a client without tasks gets the final result of such a tool as a plain call, with progress; a task-capable
client's task (`fronts.tasks`) wraps the server's: the client sees the gateway's task id, owned by its identity
and kept in the store, and the server's id never leaves the replica that runs the call (the server's tasks are
its connection's, which no other replica shares). A call that is cancelled or times out cancels the server's task.
"""

import contextlib
import logging
from typing import Any

import anyio
import anyio.lowlevel
import mcp.types as types
from mcp import ClientSession, MCPError
from mcp_types import MISSING_REQUIRED_CLIENT_CAPABILITY
from pydantic import ValidationError

from gateway import sdk
from gateway.downstreams.callers import CALL_RESULT, ToolAnswer, ToolCaller
from gateway.downstreams.deadline import Deadline
from gateway.sdk import ProgressFn
from gateway.store.tasks import TERMINAL

logger = logging.getLogger(__name__)

POLL_S = (0.01, 5.0)
"""The server's suggested polling interval is kept within these bounds (seconds); 1 s when it suggests none."""
EXTENSION = "io.modelcontextprotocol/tasks"
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
        self, name: str, arguments: dict[str, Any] | None, *, limit: Deadline, extra: dict[str, Any] | None = None
    ) -> ToolAnswer:
        with limit.kept():
            result = await self._call(name, arguments, limit.most_s, limit.progress, extra)
        return result

    async def _call(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        timeout_s: float,
        progress: ProgressFn | None,
        extra: dict[str, Any] | None,
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


def _needs_tasks(exc: MCPError) -> bool:
    """Whether a server refused a call because the caller did not declare the tasks extension."""
    data = exc.error.data if exc.error.code == MISSING_REQUIRED_CLIENT_CAPABILITY else None
    required = data.get("requiredCapabilities") if isinstance(data, dict) else None
    extensions = required.get("extensions") if isinstance(required, dict) else None
    return isinstance(extensions, dict) and EXTENSION in extensions


class ModernTasks:
    """A 2026-era server's calls (a `ToolCaller` around the connection's own): a call the server runs only as a
    task is sent again declaring the tasks extension, and its task followed to its end."""

    def __init__(self, inner: ToolCaller, session: ClientSession) -> None:
        self._inner = inner
        self._session = session

    async def _send(self, method: str, params: dict[str, Any], timeout_s: float, name: str | None) -> dict[str, Any]:
        return await sdk.send_declaring(
            self._session, method, params, extension=EXTENSION, timeout_s=timeout_s, name=name
        )

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None, *, limit: Deadline, extra: dict[str, Any] | None = None
    ) -> ToolAnswer:
        try:
            return await self._inner.call_tool(name, arguments, limit=limit, extra=extra)
        except MCPError as exc:
            if not _needs_tasks(exc):
                raise
        with limit.kept():
            result = await self._as_task(name, arguments, limit.most_s, limit.progress, extra)
        return result

    async def _as_task(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        timeout_s: float,
        progress: ProgressFn | None,
        extra: dict[str, Any] | None,
    ) -> ToolAnswer:
        params = {"name": name, "arguments": arguments, **(extra or {})}
        with anyio.CancelScope(shield=True):  # as for a 2025 task: its id first, so that a cancel can name it
            answer = await self._send("tools/call", params, timeout_s, name)
        if answer.get("resultType") != "task":
            return CALL_RESULT.validate_python(answer, by_name=False)  # it ran after all
        task_id = str(answer.get("taskId"))
        try:
            await anyio.lowlevel.checkpoint()
            answer = await self._followed(answer, timeout_s, progress)
        except BaseException:
            with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_S):
                with contextlib.suppress(MCPError):  # cancellation is cooperative: the server may go on
                    await self._send("tasks/cancel", {"taskId": task_id}, CANCEL_S, task_id)
            raise
        if answer.get("status") == "completed" and isinstance(answer.get("result"), dict):
            return CALL_RESULT.validate_python(answer["result"], by_name=False)
        found = answer.get("error")
        error: dict[str, Any] = found if isinstance(found, dict) else {}
        message = str(error.get("message") or answer.get("statusMessage") or f"the task ended {answer.get('status')}")
        raise MCPError(code=int(error.get("code", types.INTERNAL_ERROR)), message=message)

    async def _followed(self, task: dict[str, Any], timeout_s: float, progress: ProgressFn | None) -> dict[str, Any]:
        """Poll `tasks/get` until the task ends; each new status message is progress. A task that needs input is
        not answered (the gateway declares none of the askable capabilities here): it ends when the server says."""
        told: tuple[Any, Any] | None = None
        steps = 0
        task_id = str(task.get("taskId"))
        while task.get("status") not in TERMINAL:
            if progress is not None and (task.get("status"), task.get("statusMessage")) != told:
                told, steps = (task.get("status"), task.get("statusMessage")), steps + 1
                await progress(steps, None, str(task.get("statusMessage") or task.get("status")))
            interval = task.get("pollIntervalMs")
            interval_s = 1.0 if not isinstance(interval, int | float) else interval / 1000
            await anyio.sleep(min(max(interval_s, POLL_S[0]), POLL_S[1]))
            task = await self._send("tasks/get", {"taskId": task_id}, timeout_s, task_id)
        return task
