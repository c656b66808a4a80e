"""Driver bootstrap: the first tool result of a session carries the driver prompt; instructions, resource, library."""

import hashlib
import re
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp import MCPError

from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.hosted.prompts import DEFAULT_DIR, PromptLibrary, PromptNotFound
from gateway.middleware.bootstrap import SUMMARY_LIMIT, Bootstrap, summary
from gateway.pipeline import Call
from gateway.results import Hint
from gateway.session import Session
from tests.harness import connected, write_config

pytestmark = pytest.mark.anyio

VERSION = "stable-2025-11"
DRIVER = (DEFAULT_DIR / f"{VERSION}.md").read_text(encoding="utf-8")
DIGEST = hashlib.sha256(DRIVER.encode()).hexdigest()
RESOURCE = f"gateway://prompts/{VERSION}"


def driver_hints(result: types.CallToolResult) -> list[str]:
    return [h["text"] for h in (result.meta or {}).get("gateway/hints", []) if h["kind"] == "bootstrap"]


async def session_results(
    tmp_path: Path, calls: list[tuple[str, dict[str, Any]]], **sections: Any
) -> tuple[list[types.CallToolResult], str | None]:
    """Results of `calls` on one session of an in-process gateway with no downstreams, and its instructions."""
    gateway = Gateway(load_config(write_config(tmp_path, {}, **sections)))
    async with connected(gateway) as (_, client):
        results = [await client.call_tool(name, arguments) for name, arguments in calls]
        return results, client.instructions


STATUS: tuple[str, dict[str, Any]] = ("gateway.status", {})


async def test_the_first_tool_result_carries_the_driver_summary_and_later_ones_do_not(tmp_path: Path) -> None:
    (first, second, third), _ = await session_results(tmp_path, [STATUS, STATUS, STATUS])
    [driver] = driver_hints(first)
    assert len(driver) <= 1500
    assert f"Driver {VERSION} (sha256:{DIGEST[:12]}" in driver
    assert "Full text: " in driver and RESOURCE in driver.partition("Full text: ")[2]
    assert "think.plan" in driver and "think.next" in driver and "gateway.read_output" in driver
    assert "[gateway] " + driver in [b.text for b in first.content if isinstance(b, types.TextContent)]
    assert driver_hints(second) == driver_hints(third) == []


async def test_the_driver_rides_on_the_first_result_even_when_that_call_failed(tmp_path: Path) -> None:
    (failed, ok), _ = await session_results(tmp_path, [("nope.tool", {}), STATUS])
    assert failed.is_error
    assert len(driver_hints(failed)) == 1
    assert driver_hints(ok) == []


async def test_mode_full_carries_the_whole_driver_prompt_once(tmp_path: Path) -> None:
    (first, second), _ = await session_results(tmp_path, [STATUS, STATUS], bootstrap={"mode": "full"})
    assert driver_hints(first) == [DRIVER]
    assert "[gateway] " + DRIVER in [b.text for b in first.content if isinstance(b, types.TextContent)]
    assert driver_hints(second) == []


async def test_mode_off_carries_no_driver(tmp_path: Path) -> None:
    (first, second), _ = await session_results(tmp_path, [STATUS, STATUS], bootstrap={"mode": "off"})
    assert driver_hints(first) == driver_hints(second) == []
    assert "gateway/hints" not in (first.meta or {})


async def test_initialize_instructions_carry_a_driver_summary_within_2048_chars(tmp_path: Path) -> None:
    _, instructions = await session_results(tmp_path, [])
    assert instructions is not None
    assert len(instructions) <= 2048
    assert f"Driver {VERSION} (sha256:{DIGEST[:12]}" in instructions and RESOURCE in instructions
    # A client that calls only listed tools (most IDE agents) reaches a found one through gateway.call_tool.
    assert "through gateway.call_tool {name, arguments}" in instructions


async def test_the_prompt_resource_returns_the_full_driver_text_and_is_listed(tmp_path: Path) -> None:
    gateway = Gateway(load_config(write_config(tmp_path, {})))
    async with connected(gateway) as (_, client):
        listed = [r.uri for r in (await client.list_resources()).resources]
        [content] = (await client.read_resource(RESOURCE)).contents
        unknown = f"No driver prompt 'stable-1999-01'. Known versions: {VERSION}."
        with pytest.raises(MCPError, match=re.escape(unknown)):
            await client.read_resource("gateway://prompts/stable-1999-01")
    assert RESOURCE in listed
    assert isinstance(content, types.TextResourceContents)
    assert content.text == DRIVER and content.mime_type == "text/markdown"


# -- the middleware on its own --------------------------------------------------------------------------


def tool_call(session: Session, *hints: Hint) -> Call:
    call = Call(session, "tools/call", {"name": "k.echo", "arguments": {}})
    call.hints.extend(hints)
    return call


async def test_every_session_gets_the_driver_once_and_before_the_other_hints() -> None:
    prompt = PromptLibrary().get(VERSION)
    bootstrap = Bootstrap(prompt, mode="summary", full_text=f"read the resource {RESOURCE}")
    one, two = Session("one"), Session("two")
    calls = [tool_call(one, Hint("error", "Next: x")), tool_call(one), tool_call(two), tool_call(two)]
    for call in calls:
        await bootstrap.on_response(call)
    assert [[h.kind for h in call.hints] for call in calls] == [["bootstrap", "error"], [], ["bootstrap"], []]


def test_a_summary_that_would_exceed_1500_chars_is_refused_at_construction() -> None:
    prompt = PromptLibrary().get(VERSION)
    assert SUMMARY_LIMIT == 1500
    assert len(summary(prompt, "read the resource " + RESOURCE)) <= 1500
    with pytest.raises(ValueError, match="over 1500"):
        Bootstrap(prompt, mode="summary", full_text="x" * 1500)


# -- the prompt library ------------------------------------------------------------------------------------


def test_the_library_finds_a_prompt_by_version_and_by_hash() -> None:
    library = PromptLibrary()
    prompt = library.get(VERSION)
    assert prompt.version == VERSION and prompt.text == DRIVER
    assert prompt.hash == f"sha256:{DIGEST}"
    assert library.get() == prompt  # `current`
    assert library.by_hash(f"sha256:{DIGEST}") == prompt
    assert library.by_hash(DIGEST) == prompt
    assert VERSION in library.versions


@pytest.mark.parametrize("lookup", ["version", "hash"])
def test_an_unknown_prompt_is_prompt_not_found_naming_the_known_versions(lookup: str) -> None:
    library = PromptLibrary()
    with pytest.raises(PromptNotFound, match=f"Known versions: {VERSION}") as caught:
        library.get("stable-1999-01") if lookup == "version" else library.by_hash("sha256:" + "0" * 64)
    assert caught.value.error_code == "PROMPT_NOT_FOUND"


def test_a_library_whose_current_version_is_not_listed_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A", encoding="utf-8")
    (tmp_path / "prompts.yml").write_text("current: b\nversions:\n  a: {file: a.md}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="current version 'b' is not listed"):
        PromptLibrary(tmp_path)


def test_a_library_serves_each_listed_version_and_current_picks_the_default(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A", encoding="utf-8")
    (tmp_path / "b.md").write_text("# B", encoding="utf-8")
    index = "current: b\nversions:\n  a: {file: a.md}\n  b: {file: b.md}\n"
    (tmp_path / "prompts.yml").write_text(index, encoding="utf-8")
    library = PromptLibrary(tmp_path)
    assert (library.get("a").text, library.get().text) == ("# A", "# B")
    assert library.by_hash(hashlib.sha256(b"# A").hexdigest()).version == "a"
