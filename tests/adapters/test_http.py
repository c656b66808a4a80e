"""The Streamable HTTP and legacy SSE adapters against a real kitchen server (1 MiB request-body limit)."""

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import anyio
import mcp.types as types
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import DEFAULT_MAX_SSE_EVENT_SIZE

from adapters import session_only, target
from gateway.config import HttpServerConfig, SseServerConfig
from tests.harness import port_file_server

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).with_name("kitchen_small_body.py")
MIB = 1024 * 1024
SERVER_MAX_BODY = MIB
LIMIT = 64 * MIB
Mode = Literal["legacy", "auto"]


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port_file = tmp_path_factory.mktemp("kitchen") / "port"
    argv = [sys.executable, str(SERVER), str(SERVER_MAX_BODY), "--transport", "http", "--port-file", str(port_file)]
    with port_file_server(argv, port_file) as port:
        yield f"http://127.0.0.1:{port}"


def text_of(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_http_5mb_result_arrives_whole(base_url: str, mode: Mode) -> None:
    config = HttpServerConfig(transport="http", url=f"{base_url}/mcp")
    async with Client(session_only(target(config, max_message_bytes=LIMIT)), mode=mode) as client:
        with anyio.fail_after(15):
            text = text_of(await client.call_tool("blob", {"n": 5_000_000}))
    assert text == "x" * 5_000_000


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sse_3mb_result_arrives_whole_and_the_connection_stays_usable(base_url: str, mode: Mode) -> None:
    # The stock sse_client caps events at this size and drops the whole connection above it.
    assert DEFAULT_MAX_SSE_EVENT_SIZE < 3_000_000
    config = SseServerConfig(transport="sse", url=f"{base_url}/sse")
    async with Client(session_only(target(config, max_message_bytes=LIMIT)), mode=mode) as client:
        with anyio.fail_after(15):
            assert text_of(await client.call_tool("blob", {"n": 3_000_000})) == "x" * 3_000_000
            assert text_of(await client.call_tool("echo", {"text": "again"})) == "again"


async def test_sse_event_over_max_event_bytes_fails_fast_with_connection_closed(base_url: str) -> None:
    config = SseServerConfig(transport="sse", url=f"{base_url}/sse", max_event_bytes=MIB)
    async with Client(session_only(target(config, max_message_bytes=LIMIT)), mode="legacy") as client:
        with anyio.fail_after(10), pytest.raises(MCPError) as excinfo:
            await client.call_tool("blob", {"n": 2 * MIB})
    # The Client context above exited cleanly: the owner can simply reconnect.
    assert excinfo.value.code == types.CONNECTION_CLOSED


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sse_post_rejected_by_the_server_fails_only_that_call(base_url: str, mode: Mode) -> None:
    config = SseServerConfig(transport="sse", url=f"{base_url}/sse")
    async with Client(session_only(target(config, max_message_bytes=LIMIT)), mode=mode) as client:
        with anyio.fail_after(10), pytest.raises(MCPError) as excinfo:
            await client.call_tool("measure", {"text": "y" * 5_000_000})
        assert "HTTP 413" in excinfo.value.message
        with anyio.fail_after(10):
            assert text_of(await client.call_tool("echo", {"text": "still here"})) == "still here"
