"""The 2026-07-28 intermediary rules on the way down to a 2026-era HTTP server (the kitchen's `in_region` tool, the
spec's `x-mcp-header` example, refused by the server's SDK when its headers disagree with the body): `Mcp-Name`
carries the server's own name, not the client's prefixed one, and a parameter the tool marks with `x-mcp-header` is
mirrored into its `Mcp-Param-*` header."""

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness import KITCHEN, PYTHON, connected, port_file_server, text_of, write_config

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def region_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port_file = tmp_path_factory.mktemp("region") / "port"
    argv = [PYTHON, KITCHEN, "--name", "r", "--transport", "http", "--port-file", str(port_file), "--region-tool"]
    with port_file_server(argv, port_file) as port:
        yield f"http://127.0.0.1:{port}/mcp"


async def test_a_call_reaches_a_2026_server_with_its_own_name_and_its_x_mcp_header_parameter_mirrored(
    tmp_path: Path, region_server: str
) -> None:
    config = write_config(tmp_path, {"r": {"transport": "http", "url": region_server, "protocol": "modern"}})
    async with connected(config, mode="auto") as (gateway, client):
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert listed["r.in_region"].input_schema["properties"]["region"]["x-mcp-header"] == "Region"
        result = await client.call_tool("r.in_region", {"region": "us-west1", "query": "SELECT 1"})
        assert gateway.registry.downstreams["r"].protocol_version == "2026-07-28"
    assert not result.is_error, text_of(result)
    seen = json.loads(text_of(result).split("\n")[0])
    assert seen == {"region": "us-west1", "headers": {"mcp-name": "in_region", "mcp-param-region": "us-west1"}}
