"""The adapters' HTTP and SSE tests share one real kitchen server per module, with a small request-body limit."""

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import mcp.types as types
import pytest

from tests.harness import port_file_server

SERVER = Path(__file__).with_name("kitchen_small_body.py")
MIB = 1024 * 1024
SERVER_MAX_BODY = MIB
LIMIT = 64 * MIB
Mode = Literal["legacy", "auto"]


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port_file = tmp_path_factory.mktemp("kitchen") / "port"
    argv = [sys.executable, str(SERVER), str(SERVER_MAX_BODY), "--transport", "http", "--port-file", str(port_file)]
    with port_file_server(argv, port_file) as port:
        yield f"http://127.0.0.1:{port}"


def text_of(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text
