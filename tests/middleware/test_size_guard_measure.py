"""What the size guard counts and what it never lets through: a result is measured as the client reads it, its
structured copy once; a preview is never longer than the text it shortens; a store that fails in any way leaves
the preview alone (fail closed), never the whole result."""

import json
import logging
import re
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from pydantic_core import to_json

from gateway.middleware import size_guard
from gateway.middleware.limits import SizeLimits
from gateway.middleware.size_guard import PreviewStrategy, SizeGuard, preview
from gateway.pipeline import Call
from gateway.results import text_view
from gateway.store.local.outputs import LocalOutputs, OutputStore
from gateway.store.outputs import Page, Spilled
from gateway.telemetry.repeats import Repeating
from tests import harness
from tests.harness import hints_of, text_of
from tests.think.harness import think_client

pytestmark = pytest.mark.anyio

ROWS = {"rows": [f"row {i} é€😀" for i in range(3000)]}


def answered(result: types.CallToolResult) -> Call:
    return harness.tool_call("s.report", server="s", tool="report", result=result)


@pytest.mark.parametrize("indent", [None, 2])
def test_a_text_that_is_the_structured_content_serialized_is_counted_once(indent: int | None) -> None:
    text = json.dumps(ROWS, ensure_ascii=False, indent=indent)
    result = types.CallToolResult(content=[types.TextContent(text=text)], structured_content=ROWS)
    assert answered(result).response_bytes() == len(text.encode()) == len(text_view(result).encode())


def test_structured_content_the_text_does_not_carry_is_counted_and_paged_with_it() -> None:
    near = {**ROWS, "rows": ROWS["rows"][:-1]}  # JSON, but not the same value
    for text in ("3000 rows", json.dumps(near)):
        result = types.CallToolResult(content=[types.TextContent(text=text)], structured_content=ROWS)
        view = text_view(result)
        assert view == f"{text}\n{to_json(ROWS).decode()}"
        assert answered(result).response_bytes() == len(view.encode())


@pytest.mark.parametrize("strategy", ["head", "tail", "both"])
def test_a_preview_is_never_longer_than_the_text_it_shortens(strategy: PreviewStrategy) -> None:
    budget = 1000
    for size in [*range(1, 1300, 37), 100_526]:
        text = ("é€😀x" * size)[:size]
        shown, head = preview(text, budget, strategy)
        total = len(text.encode())
        assert len(shown.encode()) <= total, (size, len(shown.encode()))
        if shown == text:
            assert head == total  # shown whole: nothing left to read on
        else:
            assert len(shown.encode()) <= budget + 100  # the markers are short


async def test_a_think_answer_of_100_kb_is_measured_once_and_reaches_the_client_whole(tmp_path: Path) -> None:
    """The issue: 101,936 bytes of text plus its structured copy counted 201,016 against Think's 200,000, and
    the "preview" was 199,697 bytes long."""
    async with think_client(tmp_path, max_inline_bytes=20_000) as client:
        params = {"name": "é" * 50_000}
        plan = await client.call_tool(
            "think.plan", {"workflow": "template_probe_v1", "run_id": "big", "params": params}
        )
        assert not plan.is_error, text_of(plan)
        got = await client.call_tool("think.state.get", {"workflow": "template_probe_v1", "run_id": "big"})
    assert not got.is_error and isinstance(got.structured_content, dict)
    text = got.content[0]
    assert isinstance(text, types.TextContent) and 100_000 < len(text.text.encode()) < 200_000
    assert json.loads(text.text) == got.structured_content
    assert got.structured_content["state"]["params"]["name"] == params["name"]
    assert not [h for h in hints_of(got) if "truncated" in h or "stored as" in h]


class GarbledStore:
    """A store that fails as no store should (the issue: a garbled Redis entry made eviction raise ValueError)."""

    ttl_s = 7200.0

    async def spill(self, owner: str, result: dict[str, Any], text: str) -> Spilled:
        raise ValueError("invalid literal for int() with base 10: b'abc'")

    async def read(self, owner: str, output_id: str, offset: int = 0, length: int = 20_000) -> Page:
        raise AssertionError("not read here")

    async def read_whole(self, owner: str, output_id: str) -> dict[str, Any]:
        raise AssertionError("not read here")


async def test_a_store_failing_in_any_way_leaves_the_preview_never_the_whole_result(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(size_guard, "repeats", Repeating(size_guard.logger))  # this test's count only
    guard = SizeGuard(GarbledStore(), SizeLimits(max_inline_bytes=20_000))
    text = "x" * 400_000
    with caplog.at_level(logging.ERROR, logger="gateway.middleware.size_guard"):
        for _ in range(3):
            call = answered(types.CallToolResult(content=[types.TextContent(text=text)]))
            await guard.on_response(call)
            assert call.tool_result is not None
            [shown] = call.tool_result.content
            assert isinstance(shown, types.TextContent) and len(shown.text.encode()) <= 20_000
            assert re.match(r"--- Output \(showing first/last \d+ bytes of 400000\)", shown.text)
            [hint] = call.hints
            assert "could not be kept (the store failed); only this preview exists" in hint.text
    [record] = caplog.records  # once, with the traceback: a store that raises this is a bug
    assert record.exc_info is not None and "400000 bytes from s.report" in record.getMessage()


async def test_a_result_over_the_limit_only_through_its_structured_content_pages_that_content(tmp_path: Path) -> None:
    guard = SizeGuard(LocalOutputs(OutputStore(tmp_path / "out")))
    call = answered(types.CallToolResult(content=[types.TextContent(text="3000 rows")], structured_content=ROWS))
    await guard.on_response(call)
    assert call.spilled is not None and call.tool_result is not None
    assert call.tool_result.structured_content is None  # too big to send; in the pages instead
    page = await guard.store.read(call.session.identity.owner, call.spilled, 0, 20_000)
    assert page.text.startswith('3000 rows\n{"rows":["row 0 é€😀"')
