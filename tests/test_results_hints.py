"""Hints: `[gateway]` text blocks after the result, mirrored in `_meta`, never cut, within their own budget."""

from pathlib import Path
from typing import Any

import mcp.types as types
import pytest

from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.results import Hint, render_hints
from tests.harness import connected, hints_of, write_config
from tests.servers.kitchen import Kitchen

pytestmark = pytest.mark.anyio

RESULT = types.CallToolResult(
    content=[types.TextContent(text="payload"), types.ResourceLink(uri="note://a", name="a")],
    meta={"io.modelcontextprotocol/serverInfo": {"name": "k", "version": "1.0"}},
)


def blocks(result: types.CallToolResult) -> list[str]:
    return [b.text for b in result.content if isinstance(b, types.TextContent)]


def test_hints_become_separate_text_blocks_after_the_content_each_starting_with_gateway() -> None:
    rendered = render_hints(RESULT, [Hint("error", "Next: retry once."), Hint("steering", "Then ask.")], 2048)
    assert rendered.content[:2] == RESULT.content
    assert rendered.content[2:] == [
        types.TextContent(text="[gateway] Next: retry once."),
        types.TextContent(text="[gateway] Then ask."),
    ]
    assert RESULT.content == [types.TextContent(text="payload"), types.ResourceLink(uri="note://a", name="a")]


def test_hints_are_mirrored_in_meta_by_kind_and_text_next_to_the_existing_meta() -> None:
    rendered = render_hints(RESULT, [Hint("error", "Next: retry once."), Hint("steering", "Then ask.")], 2048)
    assert rendered.meta == {
        "io.modelcontextprotocol/serverInfo": {"name": "k", "version": "1.0"},
        "gateway/hints": [{"kind": "error", "text": "Next: retry once."}, {"kind": "steering", "text": "Then ask."}],
    }


def test_a_hint_that_already_starts_with_the_prefix_is_not_prefixed_twice() -> None:
    rendered = render_hints(RESULT, [Hint("steering", "[gateway] Said already.")], 2048)
    assert blocks(rendered)[-1] == "[gateway] Said already."


def test_without_hints_the_result_is_returned_as_it_is() -> None:
    assert render_hints(RESULT, [], 2048) is RESULT


def test_hints_over_the_budget_are_dropped_in_order_and_a_notice_says_how_many() -> None:
    texts = ["a" * 60, "b" * 60, "c" * 30, "d" * 20]
    rendered = render_hints(RESULT, [Hint("steering", t) for t in texts], 100)
    assert blocks(rendered)[1:] == [
        "[gateway] " + "a" * 60,
        "[gateway] " + "c" * 30,
        "[gateway] 2 more gateway hints left out (hint budget 100 chars).",
    ]
    assert [h["kind"] for h in (rendered.meta or {})["gateway/hints"]] == ["steering", "steering", "budget"]


def test_the_bootstrap_hint_does_not_count_against_the_budget() -> None:
    driver = Hint("bootstrap", "D" * 1500)
    rendered = render_hints(RESULT, [driver, Hint("steering", "s" * 100)], 100)
    assert blocks(rendered)[1:] == ["[gateway] " + "D" * 1500, "[gateway] " + "s" * 100]


# -- through a gateway ---------------------------------------------------------------------------------


async def call_twice(tmp_path: Path, calls: list[tuple[str, dict[str, Any]]], **sections: Any) -> list[Any]:
    """Results of `calls` on one in-process gateway with an in-process kitchen `k`."""
    gateway = Gateway(
        load_config(write_config(tmp_path, {}, **sections)),
        in_process={"k": lambda: Kitchen("k", None, 0, []).server},
    )
    async with connected(gateway) as (_, client):
        return [await client.call_tool(name, arguments) for name, arguments in calls]


async def test_hints_come_after_a_spilled_preview_whole_and_mirrored_in_meta(tmp_path: Path) -> None:
    long_rule = "Next: " + "summarize the part you need, " * 30  # ~900 chars, kept whole
    steering = {"hints": [{"tools": ["k.blob"], "on": "truncated", "text": long_rule}]}
    [result] = await call_twice(tmp_path, [("k.blob", {"n": 100_000})], steering=steering)
    preview, link, *rest = result.content
    assert isinstance(preview, types.TextContent) and preview.text.startswith("--- Output (showing")
    assert isinstance(link, types.ResourceLink)
    assert all(isinstance(b, types.TextContent) and b.text.startswith("[gateway] ") for b in rest)
    mirrored = result.meta["gateway/hints"]
    assert [b.text for b in rest] == ["[gateway] " + h["text"] for h in mirrored]
    assert [h["kind"] for h in mirrored] == ["bootstrap", "steering", "truncated"]
    assert mirrored[1]["text"] == long_rule
    assert hints_of(result) == [b.text for b in rest]


async def test_hints_follow_an_error_result_too(tmp_path: Path) -> None:
    [result] = await call_twice(tmp_path, [("k.nope", {})], bootstrap={"mode": "off"})
    assert result.is_error
    first, *rest = result.content
    assert isinstance(first, types.TextContent) and first.text.startswith("Unknown tool 'k.nope'")
    assert [h["kind"] for h in result.meta["gateway/hints"]] == ["error"]
    assert len(rest) == 1 and hints_of(result) == [b.text for b in rest]


async def test_the_configured_hint_budget_drops_extra_hints_with_a_notice_but_keeps_the_driver(
    tmp_path: Path,
) -> None:
    rules = [
        {"tools": ["k.echo"], "on": "success", "text": "Next: " + "a" * 54},
        {"tools": ["k.echo"], "on": "success", "text": "Next: " + "b" * 54},
        {"tools": ["k.echo"], "on": "any", "text": "Next: " + "c" * 24},
    ]
    first, second = await call_twice(
        tmp_path,
        [("k.echo", {"text": "one"}), ("k.echo", {"text": "two"})],
        limits={"hint_budget_chars": 100},
        steering={"hints": rules},
    )
    for result in (first, second):
        kinds = [h["kind"] for h in result.meta["gateway/hints"]]
        texts = hints_of(result)
        assert "[gateway] Next: " + "a" * 54 in texts and "[gateway] Next: " + "c" * 24 in texts
        assert "[gateway] Next: " + "b" * 54 not in texts
        assert texts[-1] == "[gateway] 1 more gateway hints left out (hint budget 100 chars)."
        assert kinds[-1] == "budget"
    # The driver (far over 100 chars) rides on the first result without pushing anything else out.
    assert [h["kind"] for h in first.meta["gateway/hints"]] == ["bootstrap", "steering", "steering", "budget"]
    assert len(first.meta["gateway/hints"][0]["text"]) > 100
    assert [h["kind"] for h in second.meta["gateway/hints"]] == ["steering", "steering", "budget"]
