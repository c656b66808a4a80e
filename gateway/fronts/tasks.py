"""Any tool call as a durable task, whatever its server supports: 2025-11-25 experimental tasks, and the 2026-07-28
`io.modelcontextprotocol/tasks` extension (`fronts.tasks_wire` speaks both).

A task-augmented `tools/call` (`params.task`; in the 2026 era a call still running after `limits.task_after_s`
whose client declared the extension) is answered with the new task; the call itself runs in the
gateway's task group (`TaskRunner.bind`), not in the client's request, so the client may disconnect. Its status
and final result are kept in the store (`TaskRecords`: files, or Redis shared by replicas), under the identity
that made it: `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` work from any replica, and another
identity's task id is "not found", exactly as an unknown one.

Translation rules chosen where the spec leaves room:

* The pipeline runs when the call runs (exposure, policy, hints, size guard, observation, audit), not when the
  result is fetched: the size guard spills an oversized result into the identity's stored outputs, so a task
  record never holds more than a preview; the audit line carries the call's real duration; Think observes the
  step when it happened. A fetched result is only shaped for the fetching client's protocol version.
* A result with `isError` ends the task `failed` for 2025-11-25 clients (that spec's rule; `tasks/result` still
  returns it) and `completed` for 2026-era clients (the extension's rule); a cancelled task has no result
  (`tasks/result` answers an error saying so).
* `ttl` is honoured up to `limits.task_max_ttl_s` (the task says the ttl granted); without one, `DEFAULT_TTL_MS`
  (2026-era clients cannot ask for one). The record is created before the task is answered (the extension's
  MUST: a `tasks/get` on any replica finds it).
* In the 2026 era nothing is stored for a call that ends within `limits.task_after_s`: it is answered as usual.
* Each identity has at most `limits.task_max_running` tasks running and `limits.task_max_kept` kept, counted by the
  store as it creates the record (exact across replicas; read per task, so a reload applies to the next). Past
  either, a task-augmented call is refused, naming the cap, the count and what to do; a 2026-era call that outlasts
  `task_after_s` stays a plain call instead (its client's request still waits, as for any call: no work is lost).
* A task id from a client that the gateway could not have minted (`store.base.minted`) is "not found" before it
  reaches a file name or a key.
* The call runs without a client to ask: a downstream's sampling, elicitation or roots request during it is
  refused, and its progress and logs reach nobody. `notifications/tasks/status` goes to the creating
  connection when the task ends, if that connection is still open on this replica.
* A cancellation from another replica settles the task `cancelled` at once (the first terminal status wins, in
  the store); the call itself runs on to its end on the replica that started it, and its result is dropped.
* A task whose gateway process stopped ends `failed`, without a result, once its heartbeat lapses (`tasks_alive`).
"""

import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import anyio
import anyio.abc
import mcp.types as types

from gateway.config.pipeline import TASK_HEARTBEAT_S
from gateway.errors import GatewayError, RequestRejected, TaskCancelled, TaskCapReached, TaskFailed, TaskNotFound
from gateway.fronts.auth.callers import Caller
from gateway.fronts.tasks_alive import LAPSE_BEATS, beating, lapsed, settled
from gateway.store.tasks import TERMINAL, TaskCaps, TaskRecords

logger = logging.getLogger(__name__)

RELATED_TASK = "io.modelcontextprotocol/related-task"
DEFAULT_TTL_MS = 3_600_000
"""A task kept for an hour when the client names no ttl."""
MAX_TTL_MS = 86_400_000
"""The longest a task is kept (a day), whatever the client asks: the store is not an archive."""
POLL_MS = 500
"""The polling interval suggested to clients, and how often a replica that does not run a task looks for its end."""
WIRE = ("taskId", "status", "statusMessage", "createdAt", "lastUpdatedAt", "ttl", "pollInterval")
"""The record's fields that are the wire `Task` (the rest, `result` and `expires`, stay in the store)."""

RunCall = Callable[[Caller, str, dict[str, Any] | None], Awaitable[types.CallToolResult]]
"""Runs one tool call through the pipeline for a caller, without a client end (`Front.call_tool`)."""
Tell = Callable[[str, dict[str, Any]], Awaitable[None]]
"""Sends `notifications/tasks/status` to a session (by key), if its connection is open here."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def wire(record: dict[str, Any], *, modern: bool = False) -> dict[str, Any]:
    """The wire `Task` of a stored record: as 2025-11-25 defines it, or (`modern`) as the 2026-07-28 extension's
    `DetailedTask` does (`ttlMs`, `pollIntervalMs`, a tool's error result `completed`, the result inline)."""
    task = {name: record[name] for name in WIRE if record.get(name) is not None}
    if not modern:
        return task
    task["ttlMs"], task["pollIntervalMs"] = task.pop("ttl"), task.pop("pollInterval")
    if "result" in record:
        task |= {"status": "completed", "result": record["result"]}
    elif record["status"] == "failed":  # the gateway's failure, not the tool's: an error, as for a request
        task["error"] = {"code": types.INTERNAL_ERROR, "message": record.get("statusMessage", "")}
    return task


@dataclass(slots=True, eq=False)
class _Running:
    """A call running on this replica for a task (`stored`: its record exists; a deferred start creates it only
    once the call outlasts its wait)."""

    record: dict[str, Any]
    stored: bool
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    done: anyio.Event = field(default_factory=anyio.Event)
    result: types.CallToolResult | None = None


class TaskRunner:
    """Creates, runs, answers and cancels the gateway's own tasks; `bind` a task group before the first."""

    def __init__(
        self,
        records: TaskRecords,
        run: RunCall,
        tell: Tell,
        *,
        caps: Callable[[], TaskCaps],
        max_ttl_ms: int = MAX_TTL_MS,
        heartbeat_s: float = TASK_HEARTBEAT_S,
    ) -> None:
        self.records = records
        self.caps = caps
        """The caps of each owner's tasks, read as each task starts (a reload's apply to the next)."""
        self.max_ttl_ms = max_ttl_ms
        self.heartbeat_s = heartbeat_s
        self._alive_s = heartbeat_s * LAPSE_BEATS
        self._run_call = run
        self._tell = tell
        self._tg: anyio.abc.TaskGroup | None = None
        self._running: dict[tuple[str, str], _Running] = {}
        self._settling: set[tuple[str, str]] = set()
        """Tasks whose call ended here and whose result is being stored (again, after a refusal): still alive."""

    @asynccontextmanager
    async def running(self) -> AsyncIterator["TaskRunner"]:
        """Calls run in a task group of its own while inside, and the heartbeat of those stored as tasks."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            tg.start_soon(beating, self.records, self._alive, self.heartbeat_s)
            try:
                yield self
            finally:
                self._tg = None
                tg.cancel_scope.cancel()

    def _alive(self) -> list[tuple[str, str]]:
        """The tasks this replica answers for: running as tasks, or ended with their result on its way to the store."""
        return [*(key for key, running in self._running.items() if running.stored), *self._settling]

    def __len__(self) -> int:
        return len(self._running)

    async def start(
        self,
        caller: Caller,
        name: str,
        arguments: dict[str, Any] | None,
        ttl: int | None,
        *,
        after_s: float | None = None,
    ) -> dict[str, Any] | types.CallToolResult:
        """A new task running `name` for `caller`: its record (status `working`), stored before this returns. With
        `after_s`, the call's result instead when it ends within that many seconds (then nothing is stored)."""
        if self._tg is None:
            raise GatewayError("the gateway is not running yet: it cannot start tasks. Retry in a few seconds.")
        if ttl is not None and ttl < 0:
            raise RequestRejected(f"task ttl {ttl} ms is negative: send a ttl in milliseconds, or none.")
        granted = min(ttl or DEFAULT_TTL_MS, self.max_ttl_ms)
        now, task_id, owner = _now(), secrets.token_urlsafe(18), caller.identity.owner
        record: dict[str, Any] = {"taskId": task_id, "status": "working", "createdAt": now, "lastUpdatedAt": now}
        record |= {"ttl": granted, "pollInterval": POLL_MS}
        running, caps = _Running(record, stored=after_s is None), self.caps()
        if running.stored:
            await self.records.create(owner, task_id, record, granted / 1000, alive_s=self._alive_s, caps=caps)
        self._running[(owner, task_id)] = running
        self._tg.start_soon(self._run, caller, name, arguments, running)
        if after_s is None:
            return record
        try:
            with anyio.move_on_after(after_s):
                await running.done.wait()
            if not running.done.is_set():
                try:
                    await self.records.create(owner, task_id, record, granted / 1000, alive_s=self._alive_s, caps=caps)
                except TaskCapReached as capped:  # the client's request still waits: it gets the result, no task
                    logger.info("a call of %r stays a plain call, not a task: %s", name, capped)
                    await running.done.wait()
            if running.result is not None:
                return running.result  # a short call (or one the caps kept plain): no task
            if running.done.is_set():  # `_run` logged why
                raise GatewayError(f"the call of {name!r} failed inside the gateway (see its log); call it again.")
        except BaseException:  # the client's request ended before its call became a task: the call ends too
            running.scope.cancel()
            raise
        running.stored = True  # from here `_run` settles the record; before, it left the result here
        if running.result is not None:
            await self._settle(caller, running)
        return record

    async def _run(self, caller: Caller, name: str, arguments: dict[str, Any] | None, running: _Running) -> None:
        owner, task_id = caller.identity.owner, running.record["taskId"]
        try:
            with running.scope:
                result = await self._run_call(caller, name, arguments)
            if not running.scope.cancelled_caught:  # cancelled here: `cancel` settled it
                running.result = result
                if running.stored:
                    await self._settle(caller, running)
        except Exception:  # a failure of one task (the store, a bug) must not end the gateway's task group
            logger.exception("task %s (%s) failed outside its call; it fails when its heartbeat lapses", task_id, name)
        finally:
            running.done.set()
            self._running.pop((owner, task_id), None)

    async def _settle(self, caller: Caller, running: _Running) -> None:
        result = running.result
        assert result is not None
        ended = {**running.record, "status": "failed" if result.is_error else "completed", "lastUpdatedAt": _now()}
        if result.is_error:
            ended["statusMessage"] = "the tool call ended with an error result (isError); its result has it"
        ended["result"] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        owner, task_id = caller.identity.owner, running.record["taskId"]
        # Forgotten before the store takes it: the store's write can wake a reader (`tasks/result`) before this
        # resumes, and whoever reads it ended must find nothing kept in memory. The call has ended: a cancel from now
        # on is settled in the store alone, where the first to settle wins.
        self._running.pop((owner, task_id), None)
        self._settling.add((owner, task_id))  # alive meanwhile: its mark kept, no reader fails it between tries
        try:
            stored = await settled(lambda record: self.records.settle(owner, task_id, record), ended, task_id)
        finally:
            self._settling.discard((owner, task_id))
        if stored is not None:
            await self._tell(caller.key, wire(stored))

    async def get(self, owner: str, task_id: str) -> dict[str, Any]:
        record = await self._checked(owner, await self.records.get(owner, task_id))
        if record is None:
            raise TaskNotFound(task_id)
        return record

    async def _checked(self, owner: str, record: dict[str, Any] | None) -> dict[str, Any] | None:
        """The record, or (still working, its runner gone) the record settled `failed`."""
        if record is None or record["status"] in TERMINAL:
            return record
        if (key := (owner, record["taskId"])) in self._running or key in self._settling:
            return record  # running here, or its result on its way to the store: alive by definition
        return await self.records.reap(owner, record["taskId"], lapsed(record, _now()))

    async def result(self, owner: str, task_id: str) -> dict[str, Any]:
        """The task's result (a `CallToolResult` on the wire) once it is terminal: waits until then."""
        record = await self.get(owner, task_id)
        while record["status"] not in TERMINAL:
            running = self._running.get((owner, task_id))
            if running is not None:
                await running.done.wait()
            else:  # running on another replica (or its replica died: `get` fails it once its mark lapses)
                await anyio.sleep(POLL_MS / 1000)
            record = await self.get(owner, task_id)
        if record["status"] == "cancelled":
            raise TaskCancelled(task_id)
        if "result" not in record:
            raise TaskFailed(task_id, record.get("statusMessage", "no reason was stored"))
        result: dict[str, Any] = record["result"]
        result["_meta"] = {**result.get("_meta", {}), RELATED_TASK: {"taskId": task_id}}
        return result

    async def list(self, owner: str) -> list[dict[str, Any]]:
        """The owner's live tasks (2025-11-25 wire `Task`s), newest first."""
        records = [r for r in [await self._checked(owner, r) for r in await self.records.list(owner)] if r]
        return [wire(r) for r in sorted(records, key=lambda r: str(r.get("createdAt")), reverse=True)]

    async def cancel(self, owner: str, task_id: str) -> dict[str, Any]:
        record = await self.get(owner, task_id)
        if record["status"] in TERMINAL:
            raise RequestRejected(
                f"task {task_id!r} is already {record['status']}: a finished task cannot be cancelled. "
                "Call tasks/result for its outcome."
            )
        stored = await self.records.settle(
            owner,
            task_id,
            {**record, "status": "cancelled", "statusMessage": "cancelled by the client", "lastUpdatedAt": _now()},
        )
        if stored is None:
            raise TaskNotFound(task_id)
        running = self._running.get((owner, task_id))
        if running is not None:  # runs here: answered once the call has stopped
            running.scope.cancel()
            await running.done.wait()
        return stored
