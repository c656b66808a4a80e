"""The stdio adapter against the real kitchen server: big lines, the size cap, crashes and cleanup."""

import os
import sys
import time
from pathlib import Path
from typing import Literal

import anyio
import mcp.types as types
import pytest
from mcp import Client, MCPError

from adapters import session_only, target
from adapters.stdio import stdio_transport
from gateway.config import StdioServerConfig

pytestmark = pytest.mark.anyio

KITCHEN = Path(__file__).resolve().parents[1] / "servers" / "kitchen.py"
MIB = 1024 * 1024


def kitchen(max_message_bytes: int | None = None) -> StdioServerConfig:
    return StdioServerConfig(
        transport="stdio", command=sys.executable, args=[str(KITCHEN)], max_message_bytes=max_message_bytes
    )


def text_of(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_20mb_result_arrives_whole_at_linear_cost(mode: Literal["legacy", "auto"]) -> None:
    async with Client(session_only(target(kitchen(), max_message_bytes=64 * MIB)), mode=mode) as client:
        # CPU time of this process, not wall time: the reader's cost, robust to a loaded machine.
        started = time.process_time()
        with anyio.fail_after(20):
            text = text_of(await client.call_tool("blob", {"n": 20_000_000}))
        cpu = time.process_time() - started
    assert text == "x" * 20_000_000
    # Measured: the stock O(n²) reader burns ~3.3 s of CPU for this, the linear one ~0.1 s.
    assert cpu < 1.5, f"reading 20 MB cost {cpu:.1f} s of CPU"


async def test_result_over_server_limit_fails_only_that_call_and_connection_stays_usable(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The per-server cap (1 MiB) wins over the global one passed to target().
    async with Client(
        session_only(target(kitchen(max_message_bytes=MIB), max_message_bytes=64 * MIB)), mode="legacy"
    ) as client:
        with anyio.fail_after(10), pytest.raises(MCPError) as excinfo:
            await client.call_tool("blob", {"n": 2 * MIB})
        assert "max_message_bytes" in excinfo.value.message
        with anyio.fail_after(10):
            assert text_of(await client.call_tool("echo", {"text": "still here"})) == "still here"
            # Just under the cap still passes.
            assert len(text_of(await client.call_tool("blob", {"n": MIB - 200}))) == MIB - 200
    assert any("max_message_bytes is 1048576" in r.getMessage() for r in caplog.records)


async def test_server_crash_mid_call_fails_the_call_at_once_with_connection_closed() -> None:
    async with Client(session_only(target(kitchen(), max_message_bytes=64 * MIB)), mode="legacy") as client:
        with anyio.fail_after(5), pytest.raises(MCPError) as excinfo:
            await client.call_tool("crash", {})
        assert excinfo.value.code == types.CONNECTION_CLOSED
        with anyio.fail_after(5), pytest.raises(MCPError) as later:
            await client.call_tool("echo", {"text": "x"})
        assert later.value.code == types.CONNECTION_CLOSED


async def test_closing_the_client_kills_the_servers_grandchildren() -> None:
    async with Client(session_only(target(kitchen(), max_message_bytes=64 * MIB)), mode="legacy") as client:
        grandchild = int(text_of(await client.call_tool("spawn_child", {})))
        os.kill(grandchild, 0)  # alive while connected
    # Closing returns only once no group member is running any more (a zombie is dead already).
    assert not running(grandchild)
    # Reaping the zombie is init's job, which some inits do only every second or so.
    with anyio.fail_after(5):
        while True:
            try:
                os.kill(grandchild, 0)
            except ProcessLookupError:
                break
            await anyio.sleep(0.05)


async def test_missing_executable_raises_oserror_naming_the_command(tmp_path: Path) -> None:
    config = StdioServerConfig(transport="stdio", command=str(tmp_path / "no-such-server"), cwd=str(tmp_path))
    with pytest.raises(FileNotFoundError, match="no-such-server"):
        async with stdio_transport(config, max_message_bytes=MIB):
            pytest.fail("the transport must not open")


CHATTY_SERVER = """
import sys
big = '{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"' + 'x' * 3_000_000 + '"}}'
sys.stdout.write('not json\\n' + big + '\\n{"jsonrpc":"2.0","method":"notifications/ok"}\\n')
sys.stdout.flush()
sys.stdin.read()
"""


async def test_bad_and_oversized_lines_become_stream_errors_and_later_messages_still_arrive() -> None:
    config = StdioServerConfig(transport="stdio", command=sys.executable, args=["-c", CHATTY_SERVER])
    async with stdio_transport(config, max_message_bytes=MIB) as link:
        read, _write = link.streams
        with anyio.fail_after(10):
            items = [await read.receive() for _ in range(3)]
    assert isinstance(items[0], ValueError)
    assert isinstance(items[1], ValueError)
    assert "exceeds max_message_bytes" in str(items[1])
    assert not isinstance(items[2], Exception)
    assert isinstance(items[2].message, types.JSONRPCNotification)
    assert items[2].message.method == "notifications/ok"
