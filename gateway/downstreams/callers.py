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
from gateway.sdk import ProgressFn

ToolAnswer = types.CallToolResult | types.InputRequiredResult
CALL_RESULT: TypeAdapter[ToolAnswer] = TypeAdapter(ToolAnswer)


class ToolCaller(Protocol):
    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        timeout_s: float,
        progress: ProgressFn | None,
        extra: dict[str, Any] | None = None,
    ) -> ToolAnswer:
        """Send one `tools/call` (`extra`: more wire params); raises `MCPError` (or `ValidationError`)."""


class SessionCaller:
    """The SDK path: every transport has it."""

    def __init__(self, session: ClientSession) -> None:
        self._session = session

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        timeout_s: float,
        progress: ProgressFn | None,
        extra: dict[str, Any] | None = None,
    ) -> ToolAnswer:
        fields = {"name": name, "arguments": arguments, **(extra or {})}
        request = types.CallToolRequest(params=types.CallToolRequestParams.model_validate(fields))
        return await self._session.send_request(
            request, CALL_RESULT, request_read_timeout_seconds=timeout_s, progress_callback=progress
        )


class LaneCaller:
    """The lane path (stdio connections): written from the caller's task, answered by the reader."""

    def __init__(self, lane: Lane, session: ClientSession, *, modern: bool) -> None:
        self._lane = lane
        self._session = session
        self._modern = modern
        """The 2026 era stamps an envelope on each request; the handshake era's stamp adds nothing, so it is skipped."""

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        timeout_s: float,
        progress: ProgressFn | None,
        extra: dict[str, Any] | None = None,
    ) -> ToolAnswer:
        params: dict[str, Any] = {"name": name} if arguments is None else {"name": name, "arguments": arguments}
        params.update(extra or {})
        if self._modern:
            sdk.stamp_envelope(self._session, {"method": "tools/call", "params": params})
        raw = await self._lane.request("tools/call", params, time_limit_s=timeout_s, on_progress=progress)
        return CALL_RESULT.validate_python(raw, by_name=False)


def caller_for(session: ClientSession, lane: Lane | None, *, modern: bool) -> ToolCaller:
    return SessionCaller(session) if lane is None else LaneCaller(lane, session, modern=modern)
