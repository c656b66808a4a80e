"""Size guard: oversized results are spilled whole and previewed, oversized arguments are refused with guidance.

Most tests run a whole gateway in-process with the kitchen server in-process too (fast); the per-server
override and the "nothing was forwarded" proof need a real stdio kitchen (config `servers`, events file).
"""

import gzip
import json
import re
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp import Client
from mcp.server import Server, ServerRequestContext

from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.downstreams.supervision import Target
from gateway.middleware.limits import SizeLimits
from gateway.middleware.size_guard import PreviewStrategy, SizeGuard, preview
from gateway.pipeline import Call
from gateway.session import Session, os_user
from gateway.store.base import owned
from gateway.store.local.outputs import LocalOutputs, OutputStore
from tests import harness
from tests.harness import hints_of, kitchen, text_of, write_config
from tests.servers.kitchen import Kitchen

pytestmark = pytest.mark.anyio

UNIT = "é€😀"  # 2 + 3 + 4 bytes: every cut has a chance to land inside a character
N_CHARS = 30_000  # kitchen's blob returns N characters: 10,000 units, 90,000 bytes
ORIGINAL = UNIT * (N_CHARS // 3)
TOTAL = len(ORIGINAL.encode())
LIMIT = 20_000  # limits.max_inline_bytes default
LINK = re.compile(r"gateway://outputs/([0-9a-f]{24})")
NEXT = re.compile(r'next: gateway\.read_output \{"id": "[0-9a-f]{24}", "offset": (\d+)\}')
HINTED_OFFSET = re.compile(r'"offset": (\d+)')


def in_process_kitchen() -> Target:
    return Kitchen("k", None, 0, []).server


@asynccontextmanager
async def connected(
    tmp_path: Path,
    servers: dict[str, Any] | None = None,
    *,
    in_process: Mapping[str, Callable[[], Target]] | None = None,
    **sections: Any,
) -> AsyncIterator[tuple[Gateway, Client]]:
    """An in-process gateway (kitchen `k` in-process unless `servers` is given) and a legacy client."""
    if servers is None and in_process is None:
        in_process = {"k": in_process_kitchen}
    config = write_config(tmp_path, servers or {}, **sections)
    async with harness.connected(config, in_process=in_process) as (gateway, client):
        yield gateway, client


def number(pattern: re.Pattern[str], text: str) -> int:
    """The first group of the first match, as an int (the match must exist)."""
    match = pattern.search(text)
    assert match is not None, f"{pattern.pattern!r} not in {text[:200]!r}"
    return int(match[1])


def hint_texts(result: types.CallToolResult, kind: str) -> list[str]:
    return [h["text"] for h in (result.meta or {}).get("gateway/hints", []) if h["kind"] == kind]


def parse_preview(shown: str, strategy: PreviewStrategy) -> tuple[str, str, int]:
    """(head, tail, truncated) of a preview, after checking its marker lines' byte counts against what is shown."""
    if strategy == "head":
        m = re.fullmatch(
            r"--- Output \(showing first (\d+) bytes of (\d+)\) ---\n(.*)\n--- \[(\d+) bytes truncated\] ---",
            shown,
            re.S,
        )
        assert m, shown[:200]
        head, tail, cut = m[3], "", int(m[4])
        assert int(m[1]) == len(head.encode())
    elif strategy == "tail":
        m = re.fullmatch(
            r"--- \[(\d+) bytes truncated\] ---\n(.*)\n--- Output \(showing last (\d+) bytes of (\d+)\) ---",
            shown,
            re.S,
        )
        assert m, shown[:200]
        head, tail, cut = "", m[2], int(m[1])
        assert int(m[3]) == len(tail.encode())
    else:
        m = re.fullmatch(
            r"--- Output \(showing first(?:/last)? (\d+)(?:/last (\d+))? bytes of (\d+)\) ---\n(.*)\n"
            r"--- \[(\d+) bytes truncated\] ---\n(.*)",
            shown,
            re.S,
        )
        assert m, shown[:200]
        head, tail, cut = m[4], m[6], int(m[5])
        assert int(m[1]) == len(head.encode())
        assert int(m[2] or m[1]) == len(tail.encode())
    total = number(re.compile(r"bytes of (\d+)\)"), shown)
    assert len(head.encode()) + cut + len(tail.encode()) == total
    return head, tail, cut


# -- preview: the seed's marker lines, UTF-8 cuts ------------------------------------------------------


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        ("head", f"--- Output (showing first 1000 bytes of 50000) ---\n{'x' * 1000}\n--- [49000 bytes truncated] ---"),
        ("tail", f"--- [49000 bytes truncated] ---\n{'x' * 1000}\n--- Output (showing last 1000 bytes of 50000) ---"),
        (
            "both",
            f"--- Output (showing first/last 500 bytes of 50000) ---\n{'x' * 500}\n"
            f"--- [49000 bytes truncated] ---\n{'x' * 500}",
        ),
    ],
)
def test_preview_of_ascii_text_has_exactly_the_seeds_marker_lines(strategy: PreviewStrategy, expected: str) -> None:
    shown, head_bytes = preview("x" * 50_000, 1000, strategy)
    assert shown == expected
    assert head_bytes == {"head": 1000, "tail": 0, "both": 500}[strategy]


@pytest.mark.parametrize("strategy", ["head", "tail", "both"])
@pytest.mark.parametrize("budget", [1000, 1001, 1002, 1003, 19_600])
def test_preview_of_multibyte_text_cuts_on_character_boundaries_and_counts_the_bytes_shown(
    strategy: PreviewStrategy, budget: int
) -> None:
    shown, head_bytes = preview(ORIGINAL, budget, strategy)
    head, tail, _cut = parse_preview(shown, strategy)
    assert ORIGINAL.startswith(head) and ORIGINAL.endswith(tail)
    assert head_bytes == len(head.encode())
    per_side = budget if strategy != "both" else budget // 2
    for side in (head, tail):
        if side:
            assert per_side - 3 <= len(side.encode()) <= per_side


# -- unit: SizeGuard on a Call ------------------------------------------------------------------------------


def tool_call(text: str, *, structured: dict[str, Any] | None = None, output_schema: bool = False) -> Call:
    result = types.CallToolResult(content=[types.TextContent(text=text)], structured_content=structured)
    call = harness.tool_call("s.report", server="s", tool="report", result=result)
    call.has_output_schema = output_schema
    return call


async def test_a_result_of_exactly_the_limit_is_left_as_it_is(tmp_path: Path) -> None:
    guard = SizeGuard(LocalOutputs(OutputStore(tmp_path / "out")))
    call = tool_call("x" * LIMIT)
    before = call.result
    await guard.on_response(call)
    assert call.result is before and call.hints == []
    assert not (tmp_path / "out").exists()


async def test_an_oversized_result_of_an_output_schema_tool_becomes_an_error_without_structured_content(
    tmp_path: Path,
) -> None:
    guard = SizeGuard(LocalOutputs(OutputStore(tmp_path / "out")))
    rows = {"rows": [UNIT] * 5000}
    call = tool_call(json.dumps(rows, ensure_ascii=False), structured=rows, output_schema=True)
    await guard.on_response(call)
    result = call.tool_result
    assert result is not None and result.is_error is True
    assert result.structured_content is None
    preview_block, link = result.content
    assert isinstance(preview_block, types.TextContent) and preview_block.text.startswith("--- Output (showing first")
    assert isinstance(link, types.ResourceLink) and LINK.fullmatch(link.uri)
    assert [h.kind for h in call.hints] == ["truncated"]
    assert call.spilled is not None
    kept = await guard.store.read_whole(call.session.identity.owner, call.spilled)
    assert kept["structuredContent"] == rows  # the whole result, structured part included, is on disk


async def test_the_same_oversized_result_of_a_tool_without_output_schema_is_not_an_error(tmp_path: Path) -> None:
    guard = SizeGuard(LocalOutputs(OutputStore(tmp_path / "out")))
    rows = {"rows": [UNIT] * 5000}
    call = tool_call(json.dumps(rows, ensure_ascii=False), structured=rows, output_schema=False)
    await guard.on_response(call)
    result = call.tool_result
    assert result is not None and result.is_error is False
    assert result.structured_content is None  # the duplicate of the text is not sent either


async def test_a_page_of_gateway_read_output_is_never_spilled_again(tmp_path: Path) -> None:
    guard = SizeGuard(LocalOutputs(OutputStore(tmp_path / "out")), SizeLimits(max_inline_bytes=1000))
    call = tool_call("--- bytes 0-20,000 of 90,000 ---\n" + "x" * 20_000)
    call.server, call.tool = "gateway", "read_output"
    before = call.result
    await guard.on_response(call)
    assert call.result is before and call.hints == []


# -- responses through a gateway ------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["head", "tail", "both"])
async def test_a_result_over_the_limit_is_spilled_whole_and_the_client_gets_preview_link_and_hint(
    tmp_path: Path, strategy: PreviewStrategy
) -> None:
    outputs = tmp_path / "outputs"
    limits = {"truncation_strategy": strategy, "outputs_dir": str(outputs)}
    async with connected(tmp_path, limits=limits) as (_, client):
        result = await client.call_tool("k.blob", {"n": N_CHARS, "char": UNIT})
    assert not result.is_error
    shown, link, *hint_blocks = result.content
    assert isinstance(shown, types.TextContent) and isinstance(link, types.ResourceLink)
    assert all(isinstance(b, types.TextContent) and b.text.startswith("[gateway] ") for b in hint_blocks)
    # The preview: the seed's markers, a head and/or tail of the original, within the inline limit.
    head, tail, _cut = parse_preview(shown.text, strategy)
    assert ORIGINAL.startswith(head) and ORIGINAL.endswith(tail)
    assert len(shown.text.encode()) <= LIMIT
    # The link, and the whole original on disk, gzip-compressed.
    match = LINK.fullmatch(link.uri)
    assert match is not None
    output_id = match[1]
    assert link.size == TOTAL
    name = owned(os_user().owner, output_id)  # the in-process client's (the stdio front's OS user's)
    assert sorted(p.name for p in outputs.iterdir()) == [f"{name}.json.gz", f"{name}.txt.gz"]
    with gzip.open(outputs / f"{name}.json.gz", "rb") as gz:
        assert json.loads(gz.read())["content"] == [{"type": "text", "text": ORIGINAL}]
    # The hint: how to read more, starting right after what the preview's head showed.
    [hint] = hint_texts(result, "truncated")
    assert f"{TOTAL:,} bytes" in hint and f"{LIMIT:,}-byte inline limit" in hint
    assert f'gateway.read_output {{"id": "{output_id}", "offset": ' in hint and link.uri in hint
    assert number(HINTED_OFFSET, hint) == len(head.encode())
    assert "[gateway] " + hint in [b.text for b in hint_blocks if isinstance(b, types.TextContent)]


async def read_all(client: Client, output_id: str, offset: int, length: int | None = None) -> str:
    """Follow gateway.read_output's `next` offsets to the end; returns the text of every page joined."""
    parts: list[str] = []
    next_offset: int | None = offset
    pages = 0
    while next_offset is not None:
        arguments: dict[str, Any] = {"id": output_id, "offset": next_offset}
        if length is not None:
            arguments["length"] = length
        page = await client.call_tool("gateway.read_output", arguments)
        assert not page.is_error, text_of(page)
        assert not [b for b in page.content if isinstance(b, types.ResourceLink)], "a page was spilled again"
        header, _, body = text_of(page).partition("\n")
        parts.append(body)
        match = NEXT.search(header)
        next_offset = int(match[1]) if match else None
        pages += 1
        assert pages < 200
    return "".join(parts)


async def test_read_output_from_the_hinted_offset_with_default_pages_completes_the_preview_exactly(
    tmp_path: Path,
) -> None:
    async with connected(tmp_path) as (_, client):
        result = await client.call_tool("k.blob", {"n": N_CHARS, "char": UNIT})
        link = result.content[1]
        assert isinstance(link, types.ResourceLink)
        output_id = link.uri.rsplit("/", 1)[1]
        head, _, _ = parse_preview(text_of(result), "both")
        offset = number(HINTED_OFFSET, hint_texts(result, "truncated")[0])
        rest = await read_all(client, output_id, offset)  # default length: 20,000-byte pages
        assert head + rest == ORIGINAL
        assert await read_all(client, output_id, 0, length=7777) == ORIGINAL
        assert await read_all(client, output_id, 1, length=1000) == ORIGINAL[1:]  # byte 1 is inside "é"


async def test_the_output_resource_pages_by_offset_and_length_and_reassembles_the_exact_original(
    tmp_path: Path,
) -> None:
    async with connected(tmp_path) as (_, client):
        result = await client.call_tool("k.blob", {"n": N_CHARS, "char": UNIT})
        uri = next(b.uri for b in result.content if isinstance(b, types.ResourceLink))
        parts: list[str] = []
        offset: int | None = 0
        while offset is not None:
            query = f"?offset={offset}" if offset == 0 else f"?offset={offset}&length=9999"
            contents = (await client.read_resource(uri + query)).contents
            [page] = contents
            assert isinstance(page, types.TextResourceContents)
            header, _, body = page.text.partition("\n")
            parts.append(body)
            match = NEXT.search(header)
            offset = int(match[1]) if match else None
        assert "".join(parts) == ORIGINAL


async def test_a_result_below_the_limit_reaches_the_client_untouched(tmp_path: Path) -> None:
    outputs = tmp_path / "outputs"
    async with connected(tmp_path, limits={"outputs_dir": str(outputs)}) as (_, client):
        result = await client.call_tool("k.blob", {"n": 19_000})
    assert result.content[0] == types.TextContent(text="x" * 19_000)
    assert not [b for b in result.content if isinstance(b, types.ResourceLink)]
    assert hint_texts(result, "truncated") == []
    assert not outputs.exists()


async def test_a_per_tool_override_sets_the_inline_limit_of_that_tool_only(tmp_path: Path) -> None:
    limits = {"tools": {"k.blob": {"max_inline_bytes": 1000}}}
    async with connected(tmp_path, limits=limits) as (_, client):
        blob = await client.call_tool("k.blob", {"n": 2000})
        echo = await client.call_tool("k.echo", {"text": "y" * 2000})
    assert hint_texts(blob, "truncated") and "1,000-byte inline limit" in hint_texts(blob, "truncated")[0]
    assert len(text_of(blob).encode()) <= 1000
    assert echo.content[0] == types.TextContent(text="y" * 2000)


async def test_a_per_server_override_applies_to_all_its_tools_and_a_per_tool_override_wins(tmp_path: Path) -> None:
    servers = {"k": kitchen("k", limits={"max_inline_bytes": 1000})}
    limits = {"tools": {"k.echo": {"max_inline_bytes": 50_000}}}
    async with connected(tmp_path, servers, limits=limits) as (_, client):
        blob = await client.call_tool("k.blob", {"n": 2000})
        echo = await client.call_tool("k.echo", {"text": "y" * 2000})
    assert "1,000-byte inline limit" in hint_texts(blob, "truncated")[0]
    assert echo.content[0] == types.TextContent(text="y" * 2000)


async def test_when_the_outputs_folder_cannot_be_created_the_client_still_gets_the_preview_and_is_told(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    async with connected(tmp_path, limits={"outputs_dir": str(blocker / "outputs")}) as (_, client):
        result = await client.call_tool("k.blob", {"n": N_CHARS, "char": UNIT})
        assert not result.is_error
        [shown] = [b for b in result.content if isinstance(b, types.TextContent) and not b.text.startswith("[")]
        head, tail, _ = parse_preview(shown.text, "both")
        assert ORIGINAL.startswith(head) and ORIGINAL.endswith(tail)
        assert not [b for b in result.content if isinstance(b, types.ResourceLink)]
        [hint] = hint_texts(result, "truncated")
        assert f"The full output ({TOTAL:,} bytes) could not be kept" in hint
        assert "only this preview exists" in hint
        assert text_of(await client.call_tool("k.echo", {"text": "still here"})) == "still here"


# -- a downstream tool that declares an output_schema ----------------------------------------------------

REPORT = types.Tool(
    name="report",
    description="Return `rows` rows.",
    input_schema={"type": "object", "properties": {"rows": {"type": "integer"}}},
    output_schema={
        "type": "object",
        "properties": {"rows": {"type": "array", "items": {"type": "string"}}},
        "required": ["rows"],
    },
)


def report_server() -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[REPORT])

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        rows = [f"row {i} {UNIT}" for i in range(int((params.arguments or {}).get("rows", 1)))]
        text = json.dumps({"rows": rows}, ensure_ascii=False)
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content={"rows": rows})

    return Server("s", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def test_an_oversized_result_of_an_output_schema_tool_reaches_the_client_as_an_error_with_preview_and_link(
    tmp_path: Path,
) -> None:
    async with connected(tmp_path, in_process={"s": report_server}) as (_, client):
        small = await client.call_tool("s.report", {"rows": 3})
        big = await client.call_tool("s.report", {"rows": 2000})
        after = await client.call_tool("s.report", {"rows": 1})
    assert not small.is_error and small.structured_content == {"rows": [f"row {i} {UNIT}" for i in range(3)]}
    assert big.is_error is True
    assert big.structured_content is None
    assert isinstance(big.content[0], types.TextContent) and big.content[0].text.startswith("--- Output (showing")
    assert isinstance(big.content[1], types.ResourceLink) and LINK.fullmatch(big.content[1].uri)
    assert hint_texts(big, "truncated")
    assert after.structured_content == {"rows": [f"row 0 {UNIT}"]}


# -- requests ---------------------------------------------------------------------------------------------


async def test_arguments_over_the_request_limit_are_refused_with_guidance_and_never_reach_the_server(
    tmp_path: Path,
) -> None:
    events = tmp_path / "events.log"
    servers = {"k": kitchen("k", events=events)}
    async with connected(tmp_path, servers, limits={"max_request_bytes": 1000}) as (_, client):
        refused = await client.call_tool("k.measure", {"text": "y" * 2000})
        assert refused.is_error
        text = text_of(refused)
        assert "2,011 bytes" in text  # {"text":"yy…"} as JSON
        assert "1,000 bytes" in text and "limits.max_request_bytes" in text
        assert "file path" in text and "summary" in text
        assert "nothing was sent to the server" in text
        assert "call measure" not in events.read_text().splitlines()
        assert [h for h in hints_of(refused) if "resend with a reference" in h]
        ok = await client.call_tool("k.measure", {"text": "y" * 900})
    assert not ok.is_error and text_of(ok) == "received 900 chars"
    assert events.read_text().splitlines().count("call measure") == 1


async def test_a_per_tool_request_override_lets_that_tool_take_bigger_arguments(tmp_path: Path) -> None:
    limits = {"max_request_bytes": 1000, "tools": {"k.measure": {"max_request_bytes": 100_000}}}
    async with connected(tmp_path, limits=limits) as (_, client):
        measured = await client.call_tool("k.measure", {"text": "y" * 50_000})
        echoed = await client.call_tool("k.echo", {"text": "y" * 2000})
    assert text_of(measured) == "received 50000 chars"
    assert echoed.is_error and "2,011 bytes" in text_of(echoed)


def test_think_answers_get_room_by_default_but_config_can_still_limit_them(tmp_path: Path) -> None:
    """Ours: a previewed Think instruction would break the loop, so think.* gets a larger inline limit."""

    def guard_of(gateway: Gateway) -> SizeGuard:
        return next(mw for mw in gateway.pipeline.chain if isinstance(mw, SizeGuard))

    def limit(guard: SizeGuard, name: str) -> int:
        return guard.limits.limit(Call(Session("t"), "tools/call", {"name": name}), "max_inline_bytes")

    default = guard_of(Gateway(load_config(write_config(tmp_path, {"k": kitchen("k")}))))
    assert limit(default, "think.next") >= 200_000 and limit(default, "k.echo") == 20_000
    limited = write_config(tmp_path, {"k": kitchen("k")}, limits={"tools": {"think.*": {"max_inline_bytes": 5_000}}})
    assert limit(guard_of(Gateway(load_config(limited))), "think.next") == 5_000
