"""How a downstream's `tools/call` is sent: through the SDK session, or down the connection's lane.

Both callers give the same answer for the same call (tests/system/test_forwarding.py runs through both): the
lane is a shortcut past the SDK client's per-request machinery for the gateway's hottest request,
with the session's own per-era envelope stamped on it.
"""

from typing import Any, Protocol

import mcp.types as types
from mcp import ClientSession
from pydantic import TypeAdapter

from adapters.lane import Lane
from gateway import sdk
from gateway.downstreams.deadline import Deadline

ToolAnswer = types.CallToolResult | types.InputRequiredResult
CALL_RESULT: TypeAdapter[ToolAnswer] = TypeAdapter(ToolAnswer)


class ToolCaller(Protocol):
    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None, *, limit: Deadline, extra: dict[str, Any] | None = None
    ) -> ToolAnswer:
        """Send one `tools/call` (`extra`: more wire params) due at `limit.at`, which its progress moves; raises
        `MCPError` (or `ValidationError`), or TimeoutError when the caller itself ended the call at `limit.at`."""


class SessionCaller:
    """The SDK path: every transport has it."""

    def __init__(self, session: ClientSession) -> None:
        self._session = session

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None, *, limit: Deadline, extra: dict[str, Any] | None = None
    ) -> ToolAnswer:
        fields = {"name": name, "arguments": arguments, **(extra or {})}
        request = types.CallToolRequest(params=types.CallToolRequestParams.model_validate(fields))
        with limit.kept():
            result = await self._session.send_request(
                request, CALL_RESULT, request_read_timeout_seconds=limit.most_s, progress_callback=limit.progress
            )
        return result


class LaneCaller:
    """The lane path (stdio connections): written from the caller's task, answered by the reader, which also ends
    it when `limit.at` passes (REQUEST_TIMEOUT)."""

    def __init__(self, lane: Lane, session: ClientSession, *, modern: bool) -> None:
        self._lane = lane
        self._stamp = sdk.PipeStamp(session)
        self._modern = modern
        """The 2026 era stamps an envelope on each request; the handshake era's stamp adds nothing, so it is skipped."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None, *, limit: Deadline, extra: dict[str, Any] | None = None
    ) -> ToolAnswer:
        params: dict[str, Any] = {"name": name} if arguments is None else {"name": name, "arguments": arguments}
        params.update(extra or {})
        if self._modern:
            self._stamp(params)
        raw = await self._lane.request("tools/call", params, due=limit, on_progress=limit.progress)
        return CALL_RESULT.validate_python(raw, by_name=False)


def caller_for(session: ClientSession, lane: Lane | None, *, modern: bool) -> ToolCaller:
    return SessionCaller(session) if lane is None else LaneCaller(lane, session, modern=modern)
