"""The stdio front's lane: a plain `tools/call` of either era served beside the SDK's loop, its answer posted
straight to the client's pipe.

The SDK's loop hands each request through a memory stream to its dispatcher, which spawns a task,
builds a per-request connection and context (in the 2026 era a whole `Connection` from the envelope),
runs its middleware and handler, then dumps the answer again for the writer: about a third of the
gateway's CPU per forwarded call on stdio. The lane takes the plainest case, with the SDK's own
decisions first: the connection's era is the one its first request opened (`serve_dual_era_loop`'s
rule); a 2026-era call must pass the SDK's envelope ladder (`classify_inbound_request`), a
handshake-era call is served only once the SDK has answered `initialize` (at the version it
negotiated) and the front has registered the connection on `notifications/initialized` (a downstream's
question goes to it, with what the client declared); the params must pass the SDK's per-version
surface; a progress token sends the call to the SDK (it relays progress). Everything else, including
every other method, goes to the SDK.
A `notifications/cancelled` naming a lane call cancels it; the cancelled call is not answered, as the
SDK's dispatcher does not answer one either.
A call runs in a task of the lane's group; a task that finished its call waits for the next one (up to
`SPARE` wait), as spawning a task per call costs more than handing a call to a waiting one. Each task runs its
calls in one cancel scope, entered once (a scope per call cost more than the rest of the lane's own work): a
cancelled call ends its task with it, and the next call starts a new one.
"""

import asyncio
import copy
import logging
from contextlib import suppress
from typing import Any

import anyio
import anyio.abc
import mcp.types as types
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from adapters.pipe import NdjsonPipe
from gateway.errors import jsonrpc_error
from gateway.fronts.lanes import recognize
from gateway.fronts.lanes.answer import answer_tool_call
from gateway.fronts.lanes.recognize import RequestId
from gateway.fronts.server import Front

logger = logging.getLogger(__name__)

SPARE = 16
"""Tasks kept waiting for the next call: as many as calls are usually in flight at once."""
Job = tuple[RequestId, dict[str, Any], str]
Spare = tuple[asyncio.Future[Job], anyio.CancelScope]
"""A task waiting for a call: its future, and the scope its calls run in (cancelling it cancels the call)."""


class StdioLane:
    """Takes plain `tools/call` requests off the stdio front's reader (`take`); watches the SDK's answers
    (`answered`) until the handshake is done. Run `serve` beside the pipe: its task group runs the calls."""

    def __init__(self, front: Front, pipe: NdjsonPipe) -> None:
        self.front = front
        self.pipe = pipe
        self.modern: bool | None = None
        """The connection's era, decided by its first request: None until then."""
        self.legacy_version: str | None = None
        """The handshake-era version the SDK negotiated; None until it answered `initialize`."""
        self._opening: RequestId | None = None
        self._running: dict[RequestId, anyio.CancelScope] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._spare: list[Spare] = []
        """Tasks waiting for a call."""
        self._envelope: tuple[Any, str] | None = None
        """The last 2026-era envelope (`_meta`) that passed the SDK's ladder and the params check, and the version it
        gave: a client sends the same one with every call, so an equal one is not classified and validated again."""

    async def serve(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            task_status.started()
            await anyio.sleep_forever()

    def take(self, message: types.JSONRPCMessage) -> bool:
        """Serve `message` here when the lane can: True; False hands it to the SDK."""
        if isinstance(message, types.JSONRPCNotification):
            return message.method == "notifications/cancelled" and self._cancel(message.params)
        if not isinstance(message, types.JSONRPCRequest):
            return False
        route = self.route(message)
        return route is not None and self._serve(message.id, *route)

    def take_decoded(self, data: Any) -> bool:
        """Serve a decoded line here, before it is validated as a message, when it is a `tools/call` the lane can
        serve on a connection whose era is known (`take` decides the rest: False); the same checks as `take`."""
        if self.modern is None or not isinstance(data, dict) or "result" in data or "error" in data:
            return False
        if data.get("jsonrpc") != "2.0" or data.get("method") != "tools/call":
            return False
        request_id, params = data.get("id"), data.get("params")
        if isinstance(request_id, bool) or not isinstance(request_id, str | int) or not isinstance(params, dict):
            return False
        version = self._version(params)
        return version is not None and self._plain(params, version) and self._serve(request_id, params, version)

    def _serve(self, request_id: RequestId, params: dict[str, Any], version: str) -> bool:
        if self._tg is None or request_id in self._running:
            return False
        if not self.modern and self.front.relay.connection(self.front.callers.local.key) is None:
            # `initialized` is still on its way through the SDK (the client sent it and this call in one
            # write): the front does not know the connection yet, so a downstream's question would find no
            # client capabilities. The SDK's path knows them from `initialize`.
            return False
        job = (request_id, params, version)
        while self._spare:
            waiting, scope = self._spare.pop()
            if not waiting.done():  # else its task was cancelled (the lane is closing)
                self._running[request_id] = scope
                waiting.set_result(job)
                return True
        scope = anyio.CancelScope()
        self._running[request_id] = scope
        self._tg.start_soon(self._worker, scope, job)
        return True

    async def _worker(self, scope: anyio.CancelScope, job: Job) -> None:
        """Serve `job`, then the calls handed to this task while it waits among the spares, all in `scope`: a
        cancelled call ends the task (the scope cannot be entered again)."""
        with scope:
            while True:
                await self._call(*job)
                if len(self._spare) >= SPARE:
                    return
                waiting = asyncio.get_running_loop().create_future()
                spare = (waiting, scope)
                self._spare.append(spare)
                try:
                    job = await waiting
                except BaseException:
                    if waiting.done() and not waiting.cancelled():  # handed a call, cancelled before it began
                        del self._running[waiting.result()[0]]
                    raise
                finally:
                    if spare in self._spare:
                        self._spare.remove(spare)

    def route(self, message: types.JSONRPCRequest) -> tuple[dict[str, Any], str] | None:
        """(params, version) of a `tools/call` the lane can serve, else None; every request passes here, so the
        first one opens the connection's era, as the SDK decides it."""
        params = message.params
        if self.modern is None:
            self.modern = message.method != "initialize" and recognize.envelope_version(params) is not None
            if message.method == "initialize":
                self._opening = message.id
        if message.method != "tools/call" or params is None:
            return None
        version = self._version(params)
        return None if version is None or not self._plain(params, version) else (params, version)

    def answered(self, message: types.JSONRPCMessage) -> None:
        """An answer the SDK sends: the one to `initialize` fixes the handshake-era version."""
        if self._opening is None or not isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            return
        if message.id != self._opening:
            return
        self._opening = None
        version = message.result.get("protocolVersion") if isinstance(message, types.JSONRPCResponse) else None
        if version in HANDSHAKE_PROTOCOL_VERSIONS:
            self.legacy_version = version

    def _version(self, params: dict[str, Any] | None) -> str | None:
        """The version this connection serves `params` at, or None for the SDK to answer it."""
        if self.modern:
            meta = (params or {}).get("_meta")
            if self._envelope is not None and meta == self._envelope[0]:
                return self._envelope[1]
            return recognize.modern_version({"method": "tools/call", "params": params})
        if recognize.envelope_version(params) is not None:
            return None  # an enveloped request on a handshake connection: the SDK refuses it
        return self.legacy_version

    def _plain(self, params: dict[str, Any], version: str) -> bool:
        """`recognize.plain_params`, remembering a 2026-era envelope that passed."""
        if not self.modern:
            return recognize.plain_params(params, version)
        passed = self._envelope[0] if self._envelope is not None and self._envelope[1] == version else None
        if not recognize.plain_params(params, version, passed):
            return False
        if passed is None:  # a copy: the call's own may be changed on its way
            self._envelope = (copy.deepcopy(params.get("_meta")), version)
        return True

    def _cancel(self, params: dict[str, Any] | None) -> bool:
        request_id = (params or {}).get("requestId")
        scope = self._running.get(request_id) if isinstance(request_id, str | int) else None
        if scope is None:
            return False
        scope.cancel()
        return True

    async def _call(self, request_id: RequestId, params: dict[str, Any], version: str) -> None:
        """Answer one call; its cancellation (the client's `notifications/cancelled`) passes out of here."""
        try:
            answer = await answer_tool_call(self.front, self.front.callers.of(None), request_id, params, version)
            await self.pipe.send_json(answer.message, small=answer.small)
        except anyio.BrokenResourceError:
            logger.info("stdio front: the client closed stdout")
        except Exception:  # a bug in one answer must not end the front's task group, nor leave the caller waiting
            logger.exception("stdio front: answering tools/call %r failed", request_id)
            error = jsonrpc_error(
                request_id, types.INTERNAL_ERROR, "The gateway failed to answer this call; see its log."
            )
            with suppress(anyio.BrokenResourceError):
                await self.pipe.send_json(error)
        finally:
            del self._running[request_id]
