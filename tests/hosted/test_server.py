"""The gateway's own server (`gateway.status`, `gateway.read_output`, `gateway://` resources), driven through a real
`mcp.Client` in process: status in words and structure, a stored output paged back only to its owner, the page
size clamped with the model told so, the driver prompts listed and read, and every bad read an answer that says
what to do, never a crash."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import mcp.types as types
import pytest
from mcp import Client, MCPError
from mcp.types import RequestParamsMeta

from gateway.hosted import server
from gateway.hosted.prompts import PromptLibrary
from gateway.session import OWNER_META_KEY
from gateway.store.local.outputs import LocalOutputs, OutputStore
from gateway.store.outputs import MAX_PAGE_BYTES
from tests.harness import text_of

pytestmark = pytest.mark.anyio

SERVERS = {"git": {"state": "up", "tools": 12}, "jira": {"state": "down", "tools": 0}}
TEXT = "é" * 40_000 + "end"  # 80,003 bytes: two pages


def owned(owner: str) -> RequestParamsMeta:
    return cast(RequestParamsMeta, {OWNER_META_KEY: owner})


@asynccontextmanager
async def gateway_server(tmp_path: Path) -> AsyncIterator[tuple[Client, str]]:
    outputs = LocalOutputs(OutputStore(tmp_path / "out"))
    spilled = await outputs.spill("alice", {"content": [{"type": "text", "text": TEXT}]}, TEXT)

    async def status(owner: str | None) -> dict[str, dict[str, Any]]:
        return SERVERS

    built = server.build(status, outputs, PromptLibrary(), search=lambda: {"rankers": ["lexical"]})
    async with Client(built, mode="legacy") as client:
        yield client, spilled.id


async def test_status_says_how_many_servers_are_up_in_words_and_structure(tmp_path: Path) -> None:
    async with gateway_server(tmp_path) as (client, _):
        result = await client.call_tool("status", {})
    assert text_of(result).startswith("1/2 servers up.\n")
    body: Any = result.structured_content
    assert (body["up"], body["total"], body["servers"], body["search"]) == (1, 2, SERVERS, {"rankers": ["lexical"]})


async def test_a_stored_output_pages_back_to_its_owner_with_where_to_go_on(tmp_path: Path) -> None:
    async with gateway_server(tmp_path) as (client, output_id):
        first = text_of(await client.call_tool("read_output", {"id": output_id, "length": 10}, meta=owned("alice")))
        rest = text_of(await client.call_tool("read_output", {"id": output_id, "offset": 80_000}, meta=owned("alice")))
    assert first == (
        f'--- bytes 0-10 of 80,003; next: gateway.read_output {{"id": "{output_id}", "offset": 10}} ---\n' + "é" * 5
    )
    assert rest == "--- bytes 80,000-80,003 of 80,003 (end of output) ---\nend"


async def test_a_length_over_one_page_gets_one_page_and_is_told_so(tmp_path: Path) -> None:
    async with gateway_server(tmp_path) as (client, output_id):
        page = text_of(await client.call_tool("read_output", {"id": output_id, "length": 10**9}, meta=owned("alice")))
    assert page.startswith(f"(length 1,000,000,000 is over the page size; this page holds at most {MAX_PAGE_BYTES:,}")


async def test_another_owners_output_or_no_owner_at_all_reads_nothing(tmp_path: Path) -> None:
    async with gateway_server(tmp_path) as (client, output_id):
        bobs = await client.call_tool("read_output", {"id": output_id}, meta=owned("bob"))
        nobodys = await client.call_tool("read_output", {"id": output_id})
        with pytest.raises(MCPError) as unowned:
            await client.read_resource(f"gateway://outputs/{output_id}")
    assert bobs.is_error and output_id in text_of(bobs)
    assert nobodys.is_error and text_of(nobodys) == server.UNOWNED
    assert unowned.value.message == server.UNOWNED


async def test_outputs_read_as_resources_page_by_query_and_bad_queries_are_told(tmp_path: Path) -> None:
    async with gateway_server(tmp_path) as (client, output_id):
        uri = f"gateway://outputs/{output_id}?offset=80000&length=3"
        read = await client.read_resource(uri, meta=owned("alice"))
        with pytest.raises(MCPError) as bad:
            await client.read_resource(f"gateway://outputs/{output_id}?offset=x", meta=owned("alice"))
        with pytest.raises(MCPError) as elsewhere:
            await client.read_resource("gateway://nowhere/1", meta=owned("alice"))
    [contents] = read.contents
    assert isinstance(contents, types.TextResourceContents) and contents.text.endswith("---\nend")
    assert bad.value.message == "offset and length must be integers."
    assert elsewhere.value.message == "Unknown gateway resource 'gateway://nowhere/1'."


async def test_the_driver_prompts_are_listed_and_read_and_an_unknown_tool_names_the_known_ones(tmp_path: Path) -> None:
    async with gateway_server(tmp_path) as (client, _):
        listed = (await client.list_resources()).resources
        [template] = (await client.list_resource_templates()).resource_templates
        prompt = await client.read_resource(str(listed[0].uri))
        unknown = await client.call_tool("nope", {})
    assert listed and all(str(r.uri).startswith("gateway://prompts/") for r in listed)
    assert template.uri_template == "gateway://outputs/{id}"
    [contents] = prompt.contents
    assert isinstance(contents, types.TextResourceContents) and contents.mime_type == "text/markdown"
    assert text_of(unknown) == "Unknown tool 'nope'; this server has status, read_output."
