"""Steering: append "what to do next" hints to tool results, from config rules plus built-in ones."""

from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Self

import mcp.types as types

from gateway import telemetry
from gateway.config import GatewayConfig
from gateway.errors import DownstreamFailed, DownstreamTimeout, DownstreamUnavailable, RequestRejected, UnknownName
from gateway.middleware.limits import SizeLimits
from gateway.pipeline import Call, Middleware
from gateway.results import Hint

SELF_GUIDED = frozenset({"think", "prompt"})
"""The in-process Think servers, whose isError results say what to do next themselves."""

When = str
"""success | error | empty | truncated | any"""


@dataclass(frozen=True, slots=True)
class Rule:
    tools: tuple[str, ...]
    on: When
    text: str


def outcome(call: Call, limits: SizeLimits) -> set[str]:
    """The conditions a finished call satisfies (a call can be both `success` and `truncated`)."""
    result = call.result
    # An oversized error result is spilled like any other: `truncated` holds for it too.
    found = {"any", "truncated"} if limits.spills(call) else {"any"}
    if call.error is not None or (isinstance(result, types.CallToolResult) and result.is_error):
        return found | {"error"}
    found.add("success")
    if isinstance(result, types.CallToolResult):
        blank = all(isinstance(b, types.TextContent) and not b.text.strip() for b in result.content)
        if blank and result.structured_content in (None, {}, []):
            found.add("empty")
    return found


def _builtin_error_hint(call: Call) -> str:
    if call.peer is not None and call.peer.notices:  # the server asked this client something the relay could not
        return (
            "Next: this failed because the server asked the client for something the gateway could not relay (the "
            "relay notice says what); other arguments will not help: use a client that offers it (sampling, "
            "elicitation or roots, as the notice names), or another tool, and tell the user why."
        )
    match call.error:
        case UnknownName():
            return "Next: pick a tool from the names above, or find one with gateway.find_tools {query}; do not guess."
        case _ if call.refused_by == "policy":
            return (
                "Next: this is closed to you by the gateway's policy, not failing: do not retry it or reach it another "
                "way; use another tool, or tell the user that an administrator has to allow it."
            )
        case DownstreamUnavailable(server=server):
            return (
                f"Next: server {server!r} is down, so none of its tools work right now; do not retry in a loop: use "
                "another server's tools, or tell the user it is down (gateway.status shows when it is back)."
            )
        case DownstreamTimeout():
            return (
                "Next: retry once asking for less (fewer items, a narrower range, a smaller page); if it times out "
                "again, tell the user the server is too slow for this request."
            )
        case DownstreamFailed(code=code) if code != types.INVALID_PARAMS:
            return (
                "Next: the server failed, not your arguments: retry once unchanged; if it fails again, use another "
                "tool or tell the user what failed (the error above) instead of retrying."
            )
        case RequestRejected():
            return "Next: resend with a reference (path, URL, id) or a summary instead of the raw content."
        case _:
            return (
                "Next: read the error above, fix the arguments against the tool's input schema and retry once; "
                "if it fails again, tell the user what failed instead of retrying."
            )


class Steering(Middleware):
    name = "steering"

    def __init__(self, rules: Sequence[Rule] = (), *, limits: SizeLimits | None = None) -> None:
        self.rules = list(rules)
        self.limits = limits or SizeLimits(max_inline_bytes=2**62)
        """The size guard's limits (it runs later in the chain): a result over them is `truncated`."""

    @classmethod
    def from_config(cls, config: GatewayConfig, *, limits: SizeLimits) -> Self:
        return cls([Rule(tuple(h.tools), h.on, h.text) for h in config.steering.hints], limits=limits)

    async def on_response(self, call: Call) -> None:
        if not self.rules and call.error is None and not (call.tool_result is not None and call.tool_result.is_error):
            return  # no rule to match and nothing failed: no hint (most calls; the size is not measured for it)
        name = call.name
        happened = outcome(call, self.limits)
        # A Think tool failure carries its own guidance ({"error", "details", "guidance"}); the generic
        # "retry once" would contradict it (VALIDATION_FAILED: fix the fields; the step stays pending).
        own_guidance = call.error is None and call.server in SELF_GUIDED
        # A call a Think run observed was told its next step (think.next): a second, other "Next:" would contradict it.
        own_guidance = own_guidance or any(hint.kind == "observe" for hint in call.hints)
        if "error" in happened and not own_guidance:
            self._add(call, Hint("error", _builtin_error_hint(call)))
        for rule in self.rules:
            if rule.on in happened and any(fnmatchcase(name, pattern) for pattern in rule.tools):
                self._add(call, Hint("steering", rule.text))

    def _add(self, call: Call, hint: Hint) -> None:
        call.hints.append(hint)
        telemetry.event("gateway.hint", **{"hint.kind": hint.kind, "hint.chars": len(hint.text)})
