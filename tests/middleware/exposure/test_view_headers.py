"""A tool a client rule renames keeps its `x-mcp-header` check: the SDK checks a 2026-era call's `Mcp-Param-*`
headers against the called tool's schema, found by the name the client calls it (`Exposure.input_schema`); under a
renamed name it found no tool and let a header that disagrees with the body through."""

from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from tests.harness import http_gateway_process, kitchen, write_config

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def renaming_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    servers = {"k": kitchen("k", "--region-tool")}
    exposure = {"clients": [{"client": "cursor*", "separator": "_"}]}
    with http_gateway_process(write_config(tmp_path_factory.mktemp("renaming"), servers, exposure=exposure)) as base:
        yield base


def call(name: str, region: str) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "cursor", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    params = {"name": name, "arguments": {"region": region}, "_meta": meta}
    return {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}


async def _post(base: str, name: str, body_region: str, header_region: str) -> httpx2.Response:
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
        "Mcp-Param-Region": header_region,
    }
    async with httpx2.AsyncClient(base_url=base, timeout=30) as http:
        return await http.post("/mcp", json=call(name, body_region), headers=headers)


@pytest.mark.parametrize("name", ["k.in_region", "k_in_region"])
async def test_a_mirrored_header_that_disagrees_with_the_body_is_refused_under_the_client_s_own_name(
    renaming_gateway: str, name: str
) -> None:
    refused = await _post(renaming_gateway, name, "us-west1", "eu-west1")
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["code"] == -32020
    assert "Mcp-Param-Region" in refused.json()["error"]["message"]


async def test_a_renamed_call_whose_mirrored_header_agrees_is_served(renaming_gateway: str) -> None:
    served = await _post(renaming_gateway, "k_in_region", "us-west1", "us-west1")
    assert served.status_code == 200, served.text
    assert "us-west1" in served.json()["result"]["content"][0]["text"]
