"""Session keys: two clients never share a session (its driver bootstrap, its Think runs), on either front or era."""

from pathlib import Path

import anyio
import httpx2
import mcp.types as types
import pytest
from mcp import Client

from gateway.session import Session
from gateway.store.local.clients import LocalClients
from tests.fronts.lanes.test_http import answer, envelope, headers
from tests.harness import gateway_params, http_client, http_gateway, kitchen, write_config

pytestmark = pytest.mark.anyio


def bootstrapped(result: types.CallToolResult) -> bool:
    return any(h["kind"] == "bootstrap" for h in (result.meta or {}).get("gateway/hints", []))


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_two_http_clients_each_get_their_own_session(tmp_path: Path, mode: str) -> None:
    # Before: every 2026-era client without a session id was keyed by its IP, so the second local client
    # shared the first one's session and never saw the driver bootstrap. (Another instance of the same client,
    # by the same identity, is the same client: tests/system/test_client_continuity.py.)
    other = types.Implementation(name="another-app", version="1")
    with anyio.fail_after(60):
        async with http_gateway(write_config(tmp_path, {})) as base:
            async with http_client(base, mode=mode) as first, http_client(base, mode=mode, client_info=other) as second:
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


@pytest.mark.parametrize(("path", "carrier"), [("lane", "header"), ("sdk", "header"), ("lane", "query")])
async def test_a_2026_request_never_joins_a_2025_session_whose_id_it_carries(
    tmp_path: Path, path: str, carrier: str
) -> None:
    # The 2026-07-28 transport: "An Mcp-Session-Id header on a request: ignore it, and do not mint or echo
    # session IDs." Before, the 2026-era call was served as the 2025-era session and took its driver bootstrap.
    opening = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "old", "version": "0"}},
    }
    legacy = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    meta = {"progressToken": "p"} if path == "sdk" else {}  # progress: the SDK's path, not the lane
    with anyio.fail_after(60):
        async with http_gateway(write_config(tmp_path, {"k": kitchen("k")})) as base:
            async with httpx2.AsyncClient(base_url=base, timeout=30) as http:
                sid = (await http.post("/mcp", json=opening, headers=legacy)).headers["mcp-session-id"]
                session = legacy | {"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
                initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                assert (await http.post("/mcp", json=initialized, headers=session)).status_code == 202
                carried = {"mcp-session-id": sid} if carrier == "header" else {}
                intruder = await http.post(
                    "/mcp" if carrier == "header" else f"/mcp?session_id={sid}",
                    json=envelope("k.echo", {"text": "2026"}, **meta),
                    headers=headers("k.echo", **carried),
                )
                old = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "k.echo"}}
                old["params"]["arguments"] = {"text": "2025"}  # type: ignore[index]
                owner = await http.post("/mcp", json=old, headers=session)
    assert "mcp-session-id" not in intruder.headers  # nor echoed
    assert answer(intruder)["result"]["content"][0]["text"] == "2026"
    assert bootstrapped(types.CallToolResult.model_validate(answer(intruder)["result"]))  # its own session's first
    assert bootstrapped(types.CallToolResult.model_validate(answer(owner)["result"]))  # and the 2025 session's


async def test_a_client_on_a_connection_that_reuses_a_kept_sessions_address_gets_its_own_first_result() -> None:
    """A 2026-era session is its connection's address and port: a later client's connection may get the same port
    while the session is kept, and its first result is its own (tests/system/test_replicas_sessions.py met it)."""
    session = Session("anon|conn-127.0.0.1:40000", clients=LocalClients(60.0), client="app-haproxy")
    assert await session.first_response() and not await session.first_response()
    session.client = "app-nginx"  # the same address and port, another client
    assert await session.first_response() and not await session.first_response()
