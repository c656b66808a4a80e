"""Render: the answer as the client receives it, written onto the call by the last stage that changes it.

* A tool call's answer: a refusal or failure becomes the error result the model reads; the gateway's own words
  (hints, and the results of its and Think's tools) are put in the session's names (`call.names`, written by
  exposure; a downstream's own result is left as its server wrote it); the hints and what went wrong relaying
  (`call.peer.notices`) are appended as `[gateway]` blocks within the hint budget.
* Every answer: shaped for the protocol version the client speaks (`call.version`, by `adapt`).

After it only observers run (audit, record): they see exactly what the model got. A tool call waiting for the
client's input (a 2026-era round) is left alone: its hints wait for the final result.
"""

from collections.abc import Callable
from typing import Any

import mcp.types as types

from gateway.errors import to_tool_result
from gateway.middleware.exposure.listed import OWN_SERVERS
from gateway.pipeline import Call, Middleware, SessionNames
from gateway.results import Hint, render_hints

METHODS = frozenset(
    {
        "tools/list",
        "tools/call",
        "prompts/list",
        "prompts/get",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "completion/complete",
        "logging/setLevel",
    }
)
"""Every method the fronts send through the pipeline."""

Adapt = Callable[[Any, str | None], Any]
"""A result as a protocol version defines it (`gateway.fronts.eras.adapted`)."""


class Render(Middleware):
    name = "render"
    methods = METHODS

    def __init__(self, *, hint_budget: int, adapt: Adapt) -> None:
        self.hint_budget = hint_budget
        self.adapt = adapt

    async def on_response(self, call: Call) -> None:
        if call.method == "tools/call":
            result = call.result
            if result.__class__ is types.InputRequiredResult and call.error is None:
                return  # the client answers and retries; hints wait for the final result
            result = to_tool_result(call.error) if call.error is not None else call.tool_result
            if result is None:  # a bug: the pipeline produced no tool result; the front says so
                return
            hints = call.hints
            if call.names is not None and not call.names.identity:
                result, hints = _in_session_names(call.names, call, result)
            peer = call.peer
            if peer is not None and peer.notices:
                hints = [*hints, *(Hint("relay", notice) for notice in peer.notices)]
            call.result = render_hints(result, hints, self.hint_budget)
        if call.result is not None:
            call.result = self.adapt(call.result, call.version)


def _in_session_names(
    names: SessionNames, call: Call, result: types.CallToolResult
) -> tuple[types.CallToolResult, list[Hint]]:
    """`result` and the call's hints in `names`: a downstream's own result is left as its server wrote it."""
    hints = [Hint(h.kind, names.text(h.text)) for h in call.hints]
    if call.error is not None or call.server in OWN_SERVERS:
        content = [
            b.model_copy(update={"text": names.text(b.text)}) if isinstance(b, types.TextContent) else b
            for b in result.content
        ]
        result = result.model_copy(
            update={"content": content, "structured_content": names.deep(result.structured_content)}
        )
    return result, hints
