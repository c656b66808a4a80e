"""The Streamable HTTP adapter against a real kitchen server (`base_url`, 1 MiB request-body limit)."""

import anyio
import pytest
from mcp import Client

from adapters import session_only, target
from gateway.config import HttpServerConfig
from tests.adapters.conftest import LIMIT, Mode, text_of

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_http_5mb_result_arrives_whole(base_url: str, mode: Mode) -> None:
    config = HttpServerConfig(transport="http", url=f"{base_url}/mcp")
    async with Client(session_only(target(config, max_message_bytes=LIMIT)), mode=mode) as client:
        with anyio.fail_after(15):
            text = text_of(await client.call_tool("blob", {"n": 5_000_000}))
    assert text == "x" * 5_000_000
