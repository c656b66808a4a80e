"""A request whose MCP-Protocol-Version header disagrees with its body's `_meta` version gets 400 and -32020 naming
the header and both values, on a real gateway's HTTP front."""

from typing import Any

import httpx2
import pytest

pytestmark = pytest.mark.anyio

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def enveloped(version: str, method: str = "tools/list", **params: Any) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return {"jsonrpc": "2.0", "id": 5, "method": method, "params": {**params, "_meta": meta}}


@pytest.mark.parametrize(
    ("header", "said"),
    [("2025-06-18", "says '2025-06-18'"), ("2026-07-29", "says '2026-07-29'"), (None, "is missing")],
)
async def test_a_header_that_disagrees_with_the_body_version_gets_400_naming_the_header_and_both_values(
    kitchen_gateway: str, header: str | None, said: str
) -> None:
    headers = {**ACCEPT, "Mcp-Method": "tools/list"}
    if header is not None:
        headers["MCP-Protocol-Version"] = header
    async with httpx2.AsyncClient(base_url=kitchen_gateway, timeout=30) as http:
        answer = await http.post("/mcp", json=enveloped("2026-07-28"), headers=headers)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert answer.json()["id"] == 5 and error["code"] == -32020
    assert f"MCP-Protocol-Version header {said}" in error["message"]
    assert "'2026-07-28'" in error["message"]


async def test_a_plain_call_whose_header_agrees_is_served(kitchen_gateway: str) -> None:
    headers = {**ACCEPT, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "k.echo"}
    body = enveloped("2026-07-28", "tools/call", name="k.echo", arguments={"text": "hi"})
    async with httpx2.AsyncClient(base_url=kitchen_gateway, timeout=30) as http:
        answer = await http.post("/mcp", json=body, headers=headers)
    assert answer.status_code == 200, answer.text
    assert "error" not in answer.json()
