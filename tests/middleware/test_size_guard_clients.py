"""A result is cut once: a client that persists big results itself (Claude Code, by `clientInfo.name`) is told on
every listed tool what the gateway keeps inline, so what the gateway lets through is never cut a second time."""

from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp import Client

from gateway.app.gateway import Gateway
from gateway.config import load_config
from tests.harness import text_of, write_config
from tests.servers.kitchen import Kitchen

pytestmark = pytest.mark.anyio

MAX_RESULT_SIZE = "anthropic/maxResultSizeChars"  # what Claude Code reads on a listed tool


async def _listed_and_called(
    tmp_path: Path, client_name: str, mode: str, **sections: Any
) -> tuple[dict[str, int | None], int]:
    """Each listed tool's size hint, and the characters of a 90,000-character result as the client got it."""
    limits = {"tools": {"k.blob": {"max_inline_bytes": 150_000}}}
    config = write_config(tmp_path, {}, limits=limits, **sections)
    gateway = Gateway(load_config(config), in_process={"k": lambda: Kitchen("k", None, 0, []).server})
    info = types.Implementation(name=client_name, version="2.1.0")
    async with gateway.running(), Client(gateway.front.server, mode=mode, client_info=info) as client:
        tools = (await client.list_tools()).tools
        blob = next(tool.name for tool in tools if tool.name.endswith("blob"))
        result = await client.call_tool(blob, {"n": 90_000})
    told = {tool.name: (tool.meta or {}).get(MAX_RESULT_SIZE) for tool in tools}
    return told, len(text_of(result))


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_claude_code_is_told_the_gateway_s_inline_limit_of_each_tool_and_keeps_what_it_lets_through(
    tmp_path: Path, mode: str
) -> None:
    told, received = await _listed_and_called(tmp_path, "claude-code", mode)
    assert told["k.echo"] == 20_000 + 2048  # the default inline limit, and room for the gateway's hints
    assert told["k.blob"] == 150_000 + 2048  # over Claude Code's own 100,000: it would have cut this again
    assert told["think.plan"] == 200_000 + 2048  # Think's answers are never previewed, nor persisted by the client
    assert 90_000 <= received <= told["k.blob"]  # inline, whole, once


async def test_a_client_that_does_not_read_the_hint_is_not_told(tmp_path: Path) -> None:
    told, _ = await _listed_and_called(tmp_path, "cline", "legacy")
    assert set(told.values()) == {None}


async def test_a_client_whose_rule_renames_tools_is_told_the_widest_limit_in_force(tmp_path: Path) -> None:
    """Its names (`k_blob`) match none of the limits' globs (`k.blob`, `think.*`): each tool is told a bound the
    gateway's own cut never passes, rather than a default a Think answer would exceed."""
    exposure = {"clients": [{"client": "claude-code*", "separator": "_"}]}
    told, received = await _listed_and_called(tmp_path, "claude-code", "legacy", exposure=exposure)
    assert told["think_plan"] == told["k_blob"] == told["k_echo"] == 200_000 + 2048
    assert 90_000 <= received <= told["k_blob"]
