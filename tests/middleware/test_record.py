"""The recorder's buffer of recent calls stays within its count and byte caps, keeps no spilled original, and
keeps none of a call's arguments or secrets but for a caller who chose to see their own."""

import mcp.types as types
import pytest

from gateway.errors import GatewayError
from gateway.middleware.record import Recorded, Recorder
from gateway.pipeline import Call
from gateway.results import text_result
from gateway.session import Identity, Session

pytestmark = pytest.mark.anyio


def finished(text: str, *, spilled: str | None = None) -> Call:
    call = Call(
        Session("s"), "tools/call", {"name": "k.echo", "arguments": {"text": "secret"}}, server="k", tool="echo"
    )
    call.downstream = text_result(text)
    call.result = call.downstream if spilled is None else text_result(text[:100])
    call.spilled = spilled
    call.forward_s = 0.001
    return call


async def test_the_oldest_calls_leave_when_the_count_cap_is_reached() -> None:
    recorder = Recorder(max_calls=3)
    for i in range(5):
        await recorder.on_response(finished(f"result {i}"))
    assert [text_of(r) for r in recorder.drain()] == ["result 2", "result 3", "result 4"]
    assert recorder.operations.server.series[("tools/call", "k.echo", None)].count == 5  # metrics count all


async def test_the_oldest_calls_leave_when_the_results_held_pass_the_byte_cap() -> None:
    recorder = Recorder(max_calls=100, max_bytes=10_000)
    for _ in range(10):
        await recorder.on_response(finished("x" * 3000))
    assert len(recorder.recent) == 3
    held = recorder.held
    assert held == sum(r.held for r in recorder.drain()) <= 10_000 and recorder.held == 0


async def test_calls_with_big_arguments_all_stay_since_the_arguments_are_not_kept() -> None:
    recorder = Recorder()  # the defaults: 500 calls, 32 MiB
    big = "a" * 2_000_000  # one string for all: the test's own memory stays small
    for i in range(240):
        call = finished(f"result {i}")
        call.params["arguments"] = {"text": big}
        call.request_bytes = len(big) + 12  # as the size guard measures it
        await recorder.on_response(call)
    kept = recorder.drain()
    assert len(kept) == 240  # counted against the budget, 2 MB each left the newest 16
    assert [r.request_bytes for r in kept[:1]] == [2_000_012]  # still shown as a size


async def test_only_the_results_an_entry_keeps_count_against_the_byte_cap() -> None:
    recorder = Recorder(max_calls=100, max_bytes=10_000)
    refused = finished("x" * 3000)
    refused.result, refused.downstream = None, None  # refused before the forward: nothing to keep
    refused.error, refused.request_bytes = GatewayError("no"), 5000  # measured, then refused by policy
    await recorder.on_response(refused)
    await recorder.on_response(finished("x" * 3000))
    shared = recorder.recent[-1][-1]
    assert recorder.recent[0][-1] == 0 and 3000 <= shared < 6000  # the server's result, sent as is: once
    cut = finished("x" * 3000)
    cut.result = text_result("x" * 100)  # rewritten without a spill: both are kept, both count
    await recorder.on_response(cut)
    assert recorder.recent[-1][-1] >= 3100


async def test_a_spilled_result_is_held_as_its_preview_only() -> None:
    recorder = Recorder()
    call = finished("x" * 1_000_000, spilled="out-1")
    await recorder.on_response(call)
    assert recorder.held < 1000
    [kept] = recorder.drain()
    assert kept.downstream is None and kept.spilled == "out-1"


async def test_a_recorded_call_keeps_neither_its_arguments_nor_its_secrets() -> None:
    recorder = Recorder()
    call = finished("result")
    call.secrets = {"TOKEN": "s3cret"}
    await recorder.on_response(call)
    [kept] = recorder.drain()
    kept_values: list[object] = list(kept)
    assert not any(value is call or value is call.params or value is call.secrets for value in kept_values)
    assert "secret" not in repr(kept) and "s3cret" not in repr(kept)


async def test_only_the_arguments_of_a_caller_who_chose_to_see_them_are_kept_and_counted() -> None:
    alice, bob = Identity("alice", "static", "alice"), Identity("bob", "static", "bob")
    recorder = Recorder()
    recorder.arguments_of = frozenset({alice.owner})
    for who in (alice, bob):
        call = finished("result")
        call.session = Session(f"s-{who.name}", who)
        call.request_bytes = 30
        await recorder.on_response(call)
    mine, theirs = recorder.drain()
    assert mine.arguments == {"text": "secret"} and mine.held == len("result") + 30
    assert theirs.arguments is None and theirs.held == len("result")


def text_of(recorded: Recorded) -> str:
    assert recorded.result is not None and isinstance(recorded.result.content[0], types.TextContent)
    return recorded.result.content[0].text
