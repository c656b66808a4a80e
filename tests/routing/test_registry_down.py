"""A call to a tool of a server that never came up is told that server is down (and what to do), not that the
tool is unknown with a list of other tools' names."""

from pathlib import Path

import mcp.types as types
import pytest

from tests.harness import connected, kitchen, write_config

pytestmark = pytest.mark.anyio


async def test_a_call_to_a_down_servers_tool_says_the_server_is_down(tmp_path: Path) -> None:
    servers = {"k": kitchen("k"), "search": {"transport": "stdio", "command": "/nonexistent/search-server"}}
    async with connected(write_config(tmp_path, servers, bootstrap={"mode": "off"})) as (_, client):
        down = await client.call_tool("search.query", {"q": "x"})
        unknown = await client.call_tool("k.nosuch", {})
    text = "\n".join(b.text for b in down.content if isinstance(b, types.TextContent))
    assert down.is_error and "Server 'search' is" in text and "cannot take calls right now" in text
    assert "Unknown tool" not in text and "Closest" not in text
    assert "Next: server 'search' is down" in text  # its own next step, not "pick a tool from the names above"
    unknown_text = "\n".join(b.text for b in unknown.content if isinstance(b, types.TextContent))
    assert "Unknown tool" in unknown_text  # a tool of a server that is up: still unknown
