"""A probe never locks a client out: the exact opening frames of Claude Code and the SDKs' `auto` clients, on a real
gateway's stdio front (raw pipes) and HTTP front; a refused or unknown-version `server/discover` leaves the connection
free to negotiate with `initialize`."""

from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client

from tests.fronts.test_stdio import Pipe, raw_gateway
from tests.harness import gateway_params, http_client, kitchen, text_of, write_config

pytestmark = pytest.mark.anyio

CLAUDE_CODE_PROBE = {
    "jsonrpc": "2.0",
    "id": "server-discover-probe-1",
    "method": "server/discover",
    "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}},
}
"""The probe Claude Code sends, verbatim: no `clientCapabilities`, which the spec requires on every request."""


def fallback(version: str = "2025-06-18", request_id: int | str = 0) -> dict[str, Any]:
    """Claude Code's fallback handshake after a refused probe."""
    client = {"name": "claude-code", "version": "2.1.0"}
    params = {"protocolVersion": version, "capabilities": {"roots": {}}, "clientInfo": client}
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}


def sdk_probe(version: str, request_id: int = 0) -> dict[str, Any]:
    """The probe of the Python SDK's `mode="auto"` client (`ClientSession.send_discover`): the whole envelope."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": {"name": "mcp", "version": "2.3.0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return {"jsonrpc": "2.0", "id": request_id, "method": "server/discover", "params": {"_meta": meta}}


async def _handshake_works(pipe: Pipe, version: str = "2025-06-18") -> None:
    await pipe.send(fallback(version, request_id=0))
    answer = await pipe.receive()
    assert answer["id"] == 0 and answer["result"]["protocolVersion"] == version, answer
    await pipe.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    await pipe.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "k.echo", "arguments": {}}})
    called = await pipe.receive()
    assert called["id"] == 1 and "result" in called, called
    await pipe.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    listed = await pipe.receive()
    assert "k.echo" in {tool["name"] for tool in listed["result"]["tools"]}


async def test_claude_codes_probe_is_refused_as_the_spec_says_and_its_fallback_initialize_is_served_on_stdio(
    tmp_path: Path,
) -> None:
    async with raw_gateway(tmp_path) as pipe:
        await pipe.send(CLAUDE_CODE_PROBE)
        refused = await pipe.receive()
        assert refused["id"] == "server-discover-probe-1"
        assert refused["error"]["code"] == -32602  # a required envelope field is missing (basic/index)
        await _handshake_works(pipe)
        assert "clientCapabilities" in refused["error"]["message"]
        assert "initialize" in refused["error"]["message"]


async def test_a_probe_at_an_unknown_version_names_every_served_version_and_leaves_initialize_open_on_stdio(
    tmp_path: Path,
) -> None:
    async with raw_gateway(tmp_path) as pipe:
        await pipe.send(sdk_probe("2099-01-01", request_id=7))
        refused = await pipe.receive()
        assert refused["error"]["code"] == -32022
        await _handshake_works(pipe, "2025-11-25")
        assert refused["error"]["data"]["requested"] == "2099-01-01"
        assert refused["error"]["data"]["supported"][:2] == ["2026-07-28", "2025-11-25"]


async def test_a_refused_probe_then_a_good_one_opens_the_2026_era_on_stdio(tmp_path: Path) -> None:
    async with raw_gateway(tmp_path) as pipe:
        await pipe.send(sdk_probe("2099-01-01", request_id=1))
        assert (await pipe.receive())["error"]["code"] == -32022
        await pipe.send(sdk_probe("2026-07-28", request_id=2))
        discovered = await pipe.receive()
        assert "2026-07-28" in discovered["result"]["supportedVersions"], discovered
        # A successful discover fixed the era: the handshake is now refused, as the SDK refuses it.
        await pipe.send(fallback(request_id=3))
        assert (await pipe.receive())["error"]["code"] == -32022


async def test_claude_codes_probe_and_fallback_over_http(kitchen_gateway: str) -> None:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    probe_headers = {**headers, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"}
    async with httpx2.AsyncClient(base_url=kitchen_gateway, timeout=30) as http:
        refused = await http.post("/mcp", json=CLAUDE_CODE_PROBE, headers=probe_headers)
        assert refused.status_code == 400 and refused.json()["error"]["code"] == -32602
        opened = await http.post("/mcp", json=fallback(), headers=headers)
        assert opened.status_code == 200, opened.text
        assert "2025-06-18" in opened.text
        assert opened.headers.get("mcp-session-id")


async def test_the_python_sdks_auto_client_probes_and_serves_in_the_2026_era_on_stdio_and_http(
    tmp_path: Path, kitchen_gateway: str
) -> None:
    async with Client(gateway_params(write_config(tmp_path, {"k": kitchen("k")})), mode="auto") as client:
        assert client.protocol_version == "2026-07-28"
        assert text_of(await client.call_tool("k.echo", {"text": "stdio"})) == "stdio"
    async with http_client(kitchen_gateway, mode="auto") as client:
        assert client.protocol_version == "2026-07-28"
        assert text_of(await client.call_tool("k.echo", {"text": "http"})) == "http"
