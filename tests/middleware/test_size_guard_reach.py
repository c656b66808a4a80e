"""A spilled result is readable from every client (issue 35, item 4): `gateway.read_output` joins the session's list
with a `list_changed`, and a client whose list lacks it (it listed before, and lists once) is given the exact
`gateway.call_tool` call. Each client here calls only the tools it listed, as MCP Inspector 2.x and
langchain-mcp-adapters do (the latter in tests/system/test_spill_clients.py)."""

import json
import re
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client
from mcp.client.session import IncomingMessage

from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.middleware.exposure.listed import ALWAYS_LOAD_KEY
from tests.harness import hints_of, text_of, write_config
from tests.servers.kitchen import Kitchen

pytestmark = pytest.mark.anyio

READ = "gateway.read_output"
THROUGH = re.compile(r'gateway\.call_tool (\{"name": "gateway\.read_output", "arguments": \{[^}]*\}\})')
DIRECT = re.compile(r'gateway\.read_output (\{"id": "[0-9a-f]+", [^}]*\})')


class ListedOnly:
    """A client that calls only what its last `tools/list` held; `relist`: it lists again on `list_changed`."""

    def __init__(self, client: Client) -> None:
        self.client, self.names, self.changed = client, set[str](), anyio.Event()

    async def list(self) -> dict[str, types.Tool]:
        tools = {t.name: t for t in (await self.client.list_tools(cache_mode="bypass")).tools}
        self.names = set(tools)
        return tools

    async def call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        assert name in self.names, f"{name} is not in this client's list: it cannot call it"
        return await self.client.call_tool(name, arguments)


async def spill_and_read(tmp_path: Path, client_name: str, *, relist: bool, **exposure: Any) -> dict[str, Any]:
    config = write_config(tmp_path, {}, exposure={"pin": ["k.blob"], **exposure})
    gateway = Gateway(load_config(config), in_process={"k": lambda: Kitchen("k", None, 0, []).server})
    heard = anyio.Event()

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            heard.set()

    info = types.Implementation(name=client_name, version="2.1.0")
    async with (
        gateway.running(),
        Client(gateway.front.server, mode="legacy", client_info=info, message_handler=on_message) as client,
    ):
        listed = ListedOnly(client)
        before = await listed.list()
        spilled = await listed.call("k.blob", {"n": 90_000})
        notice = "\n".join(hints_of(spilled))
        if relist:
            with anyio.fail_after(10):
                await heard.wait()
            after = await listed.list()
        else:
            after = before
        if READ in listed.names:
            found = DIRECT.search(notice)
            assert found is not None, notice
            page = await listed.call(READ, json.loads(found.group(1)))
        else:
            found = THROUGH.search(notice)
            assert found is not None, notice
            page = await listed.call("gateway.call_tool", json.loads(found.group(1)))
    return {"before": before, "after": after, "page": page, "notice": notice, "heard": heard.is_set()}


async def test_a_client_that_lists_again_on_list_changed_finds_read_output_listed_after_a_spill(
    tmp_path: Path,
) -> None:
    seen = await spill_and_read(tmp_path, "mcp-inspector", relist=True, mode="search")
    assert READ not in seen["before"] and READ in seen["after"]
    assert not seen["page"].is_error and text_of(seen["page"]).startswith("--- bytes 9,800-")


async def test_a_client_that_lists_once_is_given_the_exact_call_tool_call_and_it_reads_the_output(
    tmp_path: Path,
) -> None:
    seen = await spill_and_read(tmp_path, "langchain-style", relist=False, mode="search")
    assert READ not in seen["before"] and THROUGH.search(seen["notice"])
    assert not seen["page"].is_error and text_of(seen["page"]).startswith("--- bytes 9,800-")


async def test_a_client_that_lists_everything_reads_directly_and_is_not_told_the_detour(tmp_path: Path) -> None:
    seen = await spill_and_read(tmp_path, "mcp-inspector", relist=False, mode="all")
    assert READ in seen["before"] and not THROUGH.search(seen["notice"])
    assert not seen["page"].is_error


async def test_a_natively_searching_client_gets_read_output_loaded_at_once_after_its_first_spill(
    tmp_path: Path,
) -> None:
    seen = await spill_and_read(tmp_path, "claude-code", relist=True)
    assert not (seen["before"][READ].meta or {}).get(ALWAYS_LOAD_KEY)
    assert (seen["after"][READ].meta or {}).get(ALWAYS_LOAD_KEY) is True
    assert not seen["page"].is_error
