"""Roots asked outside any call (DESIGN §15), with server-everything: it asks for roots after its handshake and
whenever the client's roots change, keeps the answer (its `get-roots-list` tool shows it) and logs "Roots
updated: N root(s)" outside any call. Over HTTP the server is told `servers.<name>.roots`; behind the stdio front
its one client is asked. Before, the gateway answered such a request with an error, and the server kept none."""

from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning

from tests.downstreams.relay.clients import Person
from tests.harness import ROOT, gateway_params, http_client, http_gateway, text_of, write_config

pytestmark = pytest.mark.anyio

EVERYTHING = ROOT / ".node" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
SERVER = {"transport": "stdio", "command": "node", "args": [str(EVERYTHING), "stdio"]}


class Told:
    """A logging callback that notes when the server says it got one root."""

    def __init__(self) -> None:
        self.one_root = anyio.Event()

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        if str(params.data).startswith("Roots updated: 1 root(s)"):
            self.one_root.set()


async def roots_after_a_change(client: Client, told: Told) -> str:
    """Make the server ask for roots outside any call (the client's roots changed), wait until it says it got
    one, and return what it now holds."""
    with pytest.warns(MCPDeprecationWarning):  # deprecated in 2026-07-28, not in this session's era
        await client.set_logging_level("info")  # its logs outside a call reach sessions that set a level
        await client.send_roots_list_changed()
    with anyio.fail_after(30):
        await told.one_root.wait()
    return text_of(await client.call_tool("e.get-roots-list", {}))


async def test_over_http_a_server_asking_outside_a_call_is_told_the_roots_configured_for_it(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"e": {**SERVER, "roots": ["/srv/shared"]}})
    told = Told()
    async with http_gateway(config) as base, http_client(base, mode="legacy", logging_callback=told.log) as client:
        seen = await roots_after_a_change(client, told)
    assert "file:///srv/shared" in seen and "1 total" in seen


async def test_behind_stdio_the_one_client_is_asked_when_a_server_asks_outside_a_call(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"e": {**SERVER, "roots": ["/srv/shared"]}})
    told = Told()
    callbacks: dict[str, Any] = {"list_roots_callback": Person("ann").roots, "logging_callback": told.log}
    async with Client(gateway_params(config), mode="legacy", **callbacks) as client:
        seen = await roots_after_a_change(client, told)
    assert "file:///work/ann" in seen and "1 total" in seen  # the client's, not the configured fallback
