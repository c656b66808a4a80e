"""Steering: config rules fire exactly when their condition holds; built-in hints follow errors and spills."""

from pathlib import Path
from typing import Any

import mcp.types as types
import pytest

from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.errors import (
    DownstreamFailed,
    DownstreamTimeout,
    DownstreamUnavailable,
    GatewayError,
    RequestRejected,
    UnknownName,
)
from gateway.inflight import Peer
from gateway.middleware.limits import SizeLimits
from gateway.middleware.steering import Rule, Steering
from gateway.pipeline import Call
from gateway.results import Hint
from tests.harness import connected, tool_call, write_config
from tests.servers.kitchen import Kitchen

pytestmark = pytest.mark.anyio

WHEN = ("success", "error", "empty", "truncated", "any")
LIMITS = SizeLimits()


def text_result(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error)


# situation -> (result, gateway error, whether the size guard will spill it)
SITUATIONS: dict[str, tuple[types.CallToolResult | None, GatewayError | None, bool]] = {
    "plain text": (text_result("hi"), None, False),
    "blank text": (text_result("  \n"), None, False),
    "no content": (types.CallToolResult(content=[]), None, False),
    "empty structured": (types.CallToolResult(content=[], structured_content={}), None, False),
    "structured only": (types.CallToolResult(content=[], structured_content={"n": 1}), None, False),
    "error result": (text_result("bad input", error=True), None, False),
    "blank error result": (text_result("", error=True), None, False),
    "gateway error": (None, UnknownName("tool", "k.nope", []), False),
    "spilled": (text_result("x" * 30_000), None, True),
    "spilled error": (text_result("x" * 30_000, error=True), None, True),
}
FIRES: dict[str, set[str]] = {
    "success": {"plain text", "blank text", "no content", "empty structured", "structured only", "spilled"},
    "error": {"error result", "blank error result", "gateway error", "spilled error"},
    "empty": {"blank text", "no content", "empty structured"},
    "truncated": {"spilled", "spilled error"},
    "any": set(SITUATIONS),
}


def finished(situation: str, name: str = "k.tool") -> tuple[Call, bool]:
    result, error, spills = SITUATIONS[situation]
    call = tool_call(name, result=result, error=error)
    return call, spills


def rule_hints(call: Call) -> list[str]:
    return [h.text for h in call.hints if h.kind == "steering"]


@pytest.mark.parametrize("when", WHEN)
async def test_a_rule_fires_exactly_when_its_condition_holds(when: str) -> None:
    fired = set()
    for situation in SITUATIONS:
        call, spills = finished(situation)
        assert LIMITS.spills(call) is spills  # the default 20,000-byte inline limit
        await Steering([Rule(("k.*",), when, f"on {when}")], limits=LIMITS).on_response(call)
        if rule_hints(call) == [f"on {when}"]:
            fired.add(situation)
        else:
            assert rule_hints(call) == []
    assert fired == FIRES[when]


async def test_a_rule_fires_only_for_tools_matching_one_of_its_globs() -> None:
    steering = Steering([Rule(("k.ec*", "j.blob"), "any", "matched")])
    for name, fires in [("k.echo", True), ("j.blob", True), ("j.echo", False), ("k.blob", False), ("kk.echo", False)]:
        call, _ = finished("plain text", name)
        await steering.on_response(call)
        assert rule_hints(call) == (["matched"] if fires else []), name


async def test_rules_fire_in_config_order_after_the_builtin_error_hint() -> None:
    steering = Steering([Rule(("*",), "any", "first"), Rule(("*",), "error", "second")])
    call, _ = finished("error result")
    await steering.on_response(call)
    assert [h.kind for h in call.hints] == ["error", "steering", "steering"]
    assert [h.text for h in call.hints][1:] == ["first", "second"]


@pytest.mark.parametrize(
    ("error", "advice"),
    [
        (UnknownName("tool", "k.nope", ["k.echo"]), "pick a tool from the names above"),
        (DownstreamUnavailable("k", "restarting", None), "server 'k' is down"),
        (DownstreamTimeout("k", 5), "retry once asking for less"),
        (RequestRejected("too big"), "resend with a reference (path, URL, id) or a summary"),
        (DownstreamFailed("k", "kaboom"), "the server failed, not your arguments"),
        (DownstreamFailed("k", "bad n", code=types.INVALID_PARAMS), "fix the arguments against the tool's input"),
    ],
)
async def test_each_kind_of_failure_gets_its_own_next_step(error: GatewayError, advice: str) -> None:
    call = tool_call("k.x", error=error)
    await Steering().on_response(call)
    [hint] = call.hints
    assert hint.kind == "error" and hint.text.startswith("Next: ") and advice in hint.text


async def test_a_policy_denial_is_told_not_to_retry_rather_than_to_fix_its_arguments() -> None:
    call = tool_call("k.x", error=GatewayError("Tool 'k.x' is not available to bob (policy rule 'r')."))
    call.refused_by = "policy"
    await Steering().on_response(call)
    [hint] = call.hints
    assert "closed to you by the gateway's policy" in hint.text and "do not retry" in hint.text
    assert "fix the arguments" not in hint.text


async def test_a_call_a_think_run_observed_gets_one_next_step_only() -> None:
    call = tool_call("k.x", result=text_result("bad input", error=True))
    call.hints.append(Hint("observe", "Step `s` of run r recorded by the gateway. Next: think.next {...}"))
    await Steering().on_response(call)
    assert [h.kind for h in call.hints] == ["observe"]
    assert sum(h.text.count("Next:") for h in call.hints) == 1


async def test_an_error_after_a_refused_relay_names_the_relay_not_the_arguments() -> None:
    call = tool_call("k.x", error=DownstreamFailed("k", "-32600: the calling client did not declare sampling"))
    call.peer = Peer("s", None, None, types.ClientCapabilities(), modern=True)
    call.peer.notices.append("server 'k' asked for sampling/createMessage, but this client did not declare it.")
    await Steering().on_response(call)
    [hint] = call.hints
    assert "could not relay" in hint.text and "arguments will not help" in hint.text
    assert "fix the arguments" not in hint.text


async def test_a_successful_call_gets_no_builtin_hint() -> None:
    call, _ = finished("plain text")
    await Steering().on_response(call)
    assert call.hints == []


# -- through a gateway ---------------------------------------------------------------------------------


async def test_rules_and_builtin_hints_on_real_results_through_the_gateway(tmp_path: Path) -> None:
    rules = [{"tools": ["k.*"], "on": when, "text": f"on {when}"} for when in WHEN]
    config = load_config(write_config(tmp_path, {}, steering={"hints": rules}, bootstrap={"mode": "off"}))
    gateway = Gateway(config, in_process={"k": lambda: Kitchen("k", None, 0, []).server})
    calls: dict[str, tuple[str, dict[str, Any]]] = {
        "success": ("k.echo", {"text": "hi"}),
        "empty": ("k.echo", {"text": ""}),
        "downstream error": ("k.boom", {}),
        "unknown tool": ("k.nope", {}),
        "spilled": ("k.blob", {"n": 30_000}),
    }
    seen: dict[str, list[tuple[str, str]]] = {}
    async with connected(gateway) as (_, client):
        for label, (name, arguments) in calls.items():
            result = await client.call_tool(name, arguments)
            seen[label] = [(h["kind"], h["text"]) for h in (result.meta or {}).get("gateway/hints", [])]

    def rules_fired(label: str) -> list[str]:
        return [text for kind, text in seen[label] if kind == "steering"]

    def builtin(label: str, kind: str) -> list[str]:
        return [text for k, text in seen[label] if k == kind]

    assert rules_fired("success") == ["on success", "on any"]
    assert rules_fired("empty") == ["on success", "on empty", "on any"]
    assert rules_fired("downstream error") == ["on error", "on any"]
    assert rules_fired("unknown tool") == ["on error", "on any"]
    assert rules_fired("spilled") == ["on success", "on truncated", "on any"]

    assert builtin("success", "error") == builtin("success", "truncated") == []
    [boom] = builtin("downstream error", "error")
    assert "the server failed, not your arguments" in boom
    [unknown] = builtin("unknown tool", "error")
    assert "pick a tool" in unknown
    [spill] = builtin("spilled", "truncated")
    assert "gateway.read_output" in spill
    assert builtin("spilled", "error") == []
