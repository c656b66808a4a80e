"""Pipeline order rules: request hooks top to bottom until one answers, response hooks always all run."""

import logging
from typing import ClassVar

import mcp.types as types
import pytest

from gateway.errors import GatewayError, RequestRejected
from gateway.pipeline import Call, Middleware, Pipeline
from gateway.session import Session

pytestmark = pytest.mark.anyio


def said(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)])


def words(call: Call) -> str | None:
    """The text of the call's result, or None when it has none."""
    result = call.tool_result
    if result is None:
        return None
    block = result.content[0]
    return block.text if isinstance(block, types.TextContent) else None


class Forwarder:
    """Stands in for the registry: records that it was asked and answers, or fails with `error`."""

    def __init__(self, log: list[str], error: GatewayError | None = None) -> None:
        self.log = log
        self.error = error

    async def forward(self, call: Call) -> None:
        self.log.append("forward")
        if self.error is not None:
            raise self.error
        call.result = said("downstream result")


class Recorder(Middleware):
    """Logs each hook it runs; optionally answers, refuses or crashes in one of them."""

    def __init__(
        self,
        name: str,
        log: list[str],
        *,
        answer: str | None = None,
        refuse: GatewayError | None = None,
        crash_in: str | None = None,
        refuse_in: str = "request",
    ) -> None:
        self.label, self.log = name, log
        self.answer, self.refuse, self.crash_in, self.refuse_in = answer, refuse, crash_in, refuse_in

    async def on_request(self, call: Call) -> None:
        self.log.append(f"request {self.label}")
        self._act("request", call)

    async def on_response(self, call: Call) -> None:
        self.log.append(f"response {self.label} result={words(call)!r} error={type(call.error).__name__}")
        self._act("response", call)

    def _act(self, hook: str, call: Call) -> None:
        if self.crash_in == hook:
            raise ZeroDivisionError(f"bug in {self.label}")
        if self.refuse is not None and self.refuse_in == hook:
            raise self.refuse
        if self.answer is not None and hook == "request":
            call.result = said(self.answer)


def new_call(method: str = "tools/call") -> Call:
    return Call(Session("t"), method, {"name": "k.echo", "arguments": {"text": "hi"}})


async def test_hooks_run_request_top_to_bottom_then_forward_then_responses_top_to_bottom() -> None:
    log: list[str] = []
    pipeline = Pipeline(Forwarder(log), [Recorder("a", log), Recorder("b", log), Recorder("c", log)])
    call = new_call()
    await pipeline.handle(call)
    assert log == [
        "request a",
        "request b",
        "request c",
        "forward",
        "response a result='downstream result' error=NoneType",
        "response b result='downstream result' error=NoneType",
        "response c result='downstream result' error=NoneType",
    ]
    assert words(call) == "downstream result" and call.error is None


async def test_request_hook_setting_a_result_short_circuits_but_every_response_hook_runs() -> None:
    log: list[str] = []
    chain = [Recorder("a", log), Recorder("b", log, answer="from b"), Recorder("c", log)]
    call = new_call()
    await Pipeline(Forwarder(log), chain).handle(call)
    assert log == [
        "request a",
        "request b",
        "response a result='from b' error=NoneType",
        "response b result='from b' error=NoneType",
        "response c result='from b' error=NoneType",
    ]
    assert words(call) == "from b"


async def test_forward_error_becomes_call_error_and_every_response_hook_runs() -> None:
    log: list[str] = []
    refused = RequestRejected("too big")
    call = new_call()
    await Pipeline(Forwarder(log, error=refused), [Recorder("a", log), Recorder("b", log)]).handle(call)
    assert log == [
        "request a",
        "request b",
        "forward",
        "response a result=None error=RequestRejected",
        "response b result=None error=RequestRejected",
    ]
    assert call.error is refused


async def test_request_hook_raising_gateway_error_refuses_the_call() -> None:
    log: list[str] = []
    refused = RequestRejected("arguments are 9 MB; the limit is 4 MB")
    chain = [Recorder("a", log, refuse=refused), Recorder("b", log)]
    call = new_call()
    await Pipeline(Forwarder(log), chain).handle(call)
    assert log == [
        "request a",
        "response a result=None error=RequestRejected",
        "response b result=None error=RequestRejected",
    ]
    assert call.error is refused and call.result is None


async def test_response_hook_raising_gateway_error_sets_call_error_and_later_hooks_still_run() -> None:
    log: list[str] = []
    refused = RequestRejected("result withheld")
    chain = [Recorder("a", log, refuse=refused, refuse_in="response"), Recorder("b", log)]
    call = new_call()
    await Pipeline(Forwarder(log), chain).handle(call)
    assert log[-1] == "response b result='downstream result' error=RequestRejected"
    assert call.error is refused


@pytest.mark.parametrize("hook", ["request", "response"])
async def test_hook_raising_a_bug_is_logged_and_skipped_and_the_call_completes(
    hook: str, caplog: pytest.LogCaptureFixture
) -> None:
    log: list[str] = []
    chain = [Recorder("a", log, crash_in=hook), Recorder("b", log)]
    call = new_call()
    with caplog.at_level(logging.ERROR, logger="gateway.pipeline"):
        await Pipeline(Forwarder(log), chain).handle(call)
    assert "forward" in log
    assert log[-1] == "response b result='downstream result' error=NoneType"
    assert words(call) == "downstream result" and call.error is None
    [record] = [r for r in caplog.records if r.name == "gateway.pipeline"]
    assert f"Recorder.on_{hook}" in record.getMessage()
    assert record.exc_info is not None and isinstance(record.exc_info[1], ZeroDivisionError)


async def test_middleware_only_sees_the_methods_it_declares() -> None:
    log: list[str] = []

    class ListsOnly(Recorder):
        methods: ClassVar[frozenset[str]] = frozenset({"tools/list"})

    pipeline = Pipeline(Forwarder(log), [ListsOnly("lists", log), Recorder("calls", log)])
    await pipeline.handle(new_call("tools/list"))
    assert log == ["request lists", "forward", "response lists result='downstream result' error=NoneType"]
    log.clear()
    await pipeline.handle(new_call("tools/call"))
    assert log == ["request calls", "forward", "response calls result='downstream result' error=NoneType"]
