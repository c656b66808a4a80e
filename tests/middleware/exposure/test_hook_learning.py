"""Learning from use through a running gateway (`gateway.middleware.exposure.hook`): a client's `find_tools`, then
its call of a tool a search of that turn found, teaches the index that turn's queries for the tool, in the store."""

import shutil
from pathlib import Path

import pytest
from mcp import Client

from gateway.app.gateway import Gateway
from gateway.config import load_config
from tests.harness import write_config

pytestmark = pytest.mark.anyio

FIRST = "what hour is it over in Lisbon"
"""The user's words: before any learning, find_tools does not rank time.get_current_time first for them."""


async def found(client: Client, query: str) -> list[str]:
    result = await client.call_tool("gateway.find_tools", {"query": query})
    return [hit["name"] for hit in (result.structured_content or {})["tools"]]


async def test_a_search_then_a_call_of_what_a_later_search_found_teaches_the_first_query(tmp_path: Path) -> None:
    servers = {
        "git": {"transport": "stdio", "command": shutil.which("mcp-server-git") or "mcp-server-git"},
        "time": {"transport": "stdio", "command": shutil.which("mcp-server-time") or "mcp-server-time"},
    }
    config = write_config(tmp_path, servers, think={"state_dir": str(tmp_path / "state")}, exposure={"mode": "search"})
    gateway = Gateway(load_config(config))
    async with gateway.running(), Client(gateway.front.server, mode="legacy") as client:
        before = await found(client, FIRST)
        assert before[:1] != ["time.get_current_time"]
        assert "time.get_current_time" in await found(client, "current time in a timezone")  # the turn's 2nd search
        await client.call_tool("time.get_current_time", {"timezone": "Europe/Lisbon"})
        learned = await gateway.stores.expansions.all()
        assert learned == {"time.get_current_time": ["current time in a timezone", FIRST]}
        assert (await found(client, FIRST))[:1] == ["time.get_current_time"]
        await client.call_tool("git.git_status", {"repo_path": str(tmp_path)})  # no search found it: nothing taught
        assert await gateway.stores.expansions.all() == learned
