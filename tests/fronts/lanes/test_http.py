"""The HTTP front's lane for plain 2026-era tools/call POSTs: same answers as the SDK path, cancellation,
streamed big results, and every other request still handled by the SDK."""

import json
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp_types import CLIENT_CAPABILITIES_META_KEY, HEADER_MISMATCH, PROTOCOL_VERSION_META_KEY, SERVER_INFO_META_KEY

from tests.harness import http_client, http_gateway, kitchen, text_of, wait_for, write_config

pytestmark = pytest.mark.anyio

VERSION = "2026-07-28"


def envelope(name: str, arguments: dict[str, Any], **meta: Any) -> dict[str, Any]:
    params = {
        "name": name,
        "arguments": arguments,
        "_meta": {PROTOCOL_VERSION_META_KEY: VERSION, CLIENT_CAPABILITIES_META_KEY: {}, **meta},
    }
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}


def headers(name: str, **extra: str) -> dict[str, str]:
    return {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": VERSION,
        "mcp-method": "tools/call",
        "mcp-name": name,
        **extra,
    }


def answer(response: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC message of a reply, whether sent as JSON or as one SSE event."""
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
        message: dict[str, Any] = json.loads(data[-1])
        return message
    decoded: dict[str, Any] = response.json()
    return decoded


async def test_a_plain_tools_call_is_answered_as_the_sdk_path_answers_it(kitchen_gateway: str) -> None:
    async with httpx2.AsyncClient(base_url=kitchen_gateway, timeout=30) as http:
        await http.post("/mcp", json=envelope("k.echo", {"text": "first"}), headers=headers("k.echo"))  # bootstrap
        plain = await http.post("/mcp", json=envelope("k.echo", {"text": "hi"}), headers=headers("k.echo"))
        # A progress token needs the SSE stream, so this one is served by the SDK.
        via_sdk = await http.post(
            "/mcp", json=envelope("k.echo", {"text": "hi"}, progressToken="p"), headers=headers("k.echo")
        )
    assert plain.status_code == 200 and plain.headers["content-type"] == "application/json"
    lane, sdk = answer(plain), answer(via_sdk)
    assert lane == sdk
    assert lane["id"] == 7
    assert lane["result"]["resultType"] == "complete"
    assert lane["result"]["_meta"][SERVER_INFO_META_KEY]["name"] == "mcp-gateway"
    assert lane["result"]["content"][0] == {"type": "text", "text": "hi"}


async def test_requests_the_lane_does_not_take_get_the_sdk_s_answers(kitchen_gateway: str) -> None:
    async with httpx2.AsyncClient(base_url=kitchen_gateway, timeout=30) as http:
        broken = await http.post(
            "/mcp", content=b'{"jsonrpc": "2.0", "id": 1, "method": "tools/ca', headers=headers("x")
        )
        mismatch = await http.post("/mcp", json=envelope("k.echo", {"text": "hi"}), headers=headers("k.other"))
        no_envelope = await http.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "k.echo"}},
            headers=headers("k.echo"),
        )
        after = await http.post("/mcp", json=envelope("k.echo", {"text": "still"}), headers=headers("k.echo"))
    assert answer(broken)["error"]["code"] == -32700
    assert answer(mismatch)["error"]["code"] == HEADER_MISMATCH
    assert answer(no_envelope)["error"]["code"] == -32602
    assert answer(after)["result"]["content"][0]["text"] == "still"


async def test_a_2026_client_abandoning_a_call_cancels_it_downstream(tmp_path: Path) -> None:
    events = tmp_path / "events.log"
    config = write_config(tmp_path, {"k": kitchen("k", events=events)})
    async with http_gateway(config) as base, http_client(base) as client:
        assert client.protocol_version == VERSION
        with anyio.move_on_after(0.5) as scope:
            await client.call_tool("k.slow", {"steps": 100, "delay_s": 0.1})
        assert scope.cancelled_caught
        await wait_for(lambda: "cancelled slow" in events.read_text(), within_s=10, what="downstream cancelled")
        assert text_of(await client.call_tool("k.echo", {"text": "after"})) == "after"


async def test_a_big_result_is_streamed_in_slices_and_arrives_whole(tmp_path: Path) -> None:
    n = 5_000_000
    limits = {"max_inline_bytes": 64 * 1024 * 1024}
    config = write_config(tmp_path, {"k": kitchen("k")}, limits=limits)
    async with http_gateway(config) as base, httpx2.AsyncClient(base_url=base, timeout=60) as http:
        response = await http.post("/mcp", json=envelope("k.blob", {"n": n}), headers=headers("k.blob"))
    assert "content-length" not in response.headers  # chunked: the gateway never held the whole body
    assert len(answer(response)["result"]["content"][0]["text"]) == n
