"""Session keys: two clients never share a session (its driver bootstrap, its Think runs), on either front or era."""

from pathlib import Path

import anyio
import mcp.types as types
import pytest
from mcp import Client

from tests.harness import gateway_params, http_client, http_gateway, write_config

pytestmark = pytest.mark.anyio


def bootstrapped(result: types.CallToolResult) -> bool:
    return any(h["kind"] == "bootstrap" for h in (result.meta or {}).get("gateway/hints", []))


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_two_http_clients_each_get_their_own_session(tmp_path: Path, mode: str) -> None:
    # Before: every 2026-era client without a session id was keyed by its IP, so the second local client
    # shared the first one's session and never saw the driver bootstrap.
    with anyio.fail_after(60):
        async with http_gateway(write_config(tmp_path, {})) as base:
            async with http_client(base, mode=mode) as first, http_client(base, mode=mode) as second:
                one, one_again = [await first.call_tool("gateway.status", {}) for _ in range(2)]
                two = await second.call_tool("gateway.status", {})
    assert bootstrapped(one) and not bootstrapped(one_again)
    assert bootstrapped(two)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_two_stdio_clients_are_two_processes_with_a_session_each(tmp_path: Path, mode: str) -> None:
    params = gateway_params(write_config(tmp_path, {}))
    with anyio.fail_after(60):
        async with Client(params, mode=mode) as first, Client(params, mode=mode) as second:
            one, one_again = [await first.call_tool("gateway.status", {}) for _ in range(2)]
            two = await second.call_tool("gateway.status", {})
    assert bootstrapped(one) and not bootstrapped(one_again)
    assert bootstrapped(two)
