"""A spilled result is readable from langchain-mcp-adapters (issue 35, item 4), a client that loads the tools once and
calls only those: the gateway's notice gives it the exact `gateway.call_tool` call when `gateway.read_output` is not
among them. (A client that lists again on `list_changed`: tests/middleware/test_size_guard_reach.py.)"""

from pathlib import Path

import pytest

from tests.harness import KITCHEN, PYTHON, http_gateway, write_config
from tests.system.test_client_continuity import CLIENTS, HERE, lines_of, secret

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_langchain_reads_a_spilled_result_through_the_call_tool_the_notice_names(tmp_path: Path) -> None:
    if not (CLIENTS / "langchain" / "bin").is_dir():
        pytest.fail("langchain-mcp-adapters is not installed: run ./scripts/setup-lab")
    servers = {"kitchen": {"transport": "stdio", "command": PYTHON, "args": [KITCHEN, "--name", "kitchen"]}}
    tokens = [{"name": "lc-spill", "token": secret("lc-spill")}]
    exposure = {"mode": "search", "pin": ["kitchen.blob"]}
    config = write_config(tmp_path, servers, auth={"tokens": tokens}, exposure=exposure)
    async with http_gateway(config) as base:
        argv = [str(CLIENTS / "langchain" / "bin" / "python"), str(HERE / "langchain_spill.py")]
        lines = await lines_of([*argv, f"{base}/mcp", secret("lc-spill")])
    seen = lines["spill"]
    assert "gateway.read_output" not in seen["tools"] and "gateway.call_tool" in seen["tools"]
    assert seen["via"] == "gateway.call_tool", seen["notice"]
    assert seen["page"].startswith("--- bytes 9,800-")
