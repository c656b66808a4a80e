"""The Streamable HTTP front of a real gateway process: progress, list_changed, 10 MB, security, auth, size limit."""

import json
from pathlib import Path

import anyio
import httpx2
import mcp.types as types
import pytest
from mcp import Client, MCPError
from mcp.client.sse import sse_client

from tests.harness import http_client, http_gateway, kitchen, text_of, write_config

pytestmark = pytest.mark.anyio

TEN_MB = 10_000_000
# The size guard would spill a 10 MB result; these tests prove the transport path carries it whole.
PASS_THROUGH = {"max_inline_bytes": 64 * 1024 * 1024, "max_request_bytes": 64 * 1024 * 1024}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


async def _post_initialize(base: str, headers: dict[str, str]) -> httpx2.Response:
    async with httpx2.AsyncClient() as http:
        return await http.post(f"{base}/mcp", content=json.dumps(INITIALIZE), headers={**MCP_HEADERS, **headers})


async def test_progress_from_a_downstream_reaches_the_http_client(kitchen_gateway: str) -> None:
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with http_client(kitchen_gateway) as client:
        result = await client.call_tool("k.slow", {"steps": 3, "delay_s": 0.01}, progress_callback=on_progress)
    assert text_of(result) == "slow done"
    assert seen == [1, 2, 3]


async def test_tools_list_changed_reaches_a_2026_http_client_through_listen(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"k": kitchen("k")})
    async with http_gateway(config) as base, http_client(base) as client:
        assert client.protocol_version == "2026-07-28"
        async with client.listen(tools_list_changed=True) as subscription:
            await client.call_tool("k.add_tool", {"name": "fresh"})
            with anyio.fail_after(10):
                event = await anext(aiter(subscription))
        assert type(event).__name__ == "ToolsListChanged"
        assert "k.fresh" in {t.name for t in (await client.list_tools(cache_mode="bypass")).tools}


async def test_10mb_result_and_10mb_request_pass_http_front_to_stdio_downstream_intact(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"k": kitchen("k")}, limits=PASS_THROUGH)
    async with http_gateway(config) as base, http_client(base, read_timeout_seconds=120) as client:
        blob = await client.call_tool("k.blob", {"n": TEN_MB})
        assert not blob.is_error
        payload = blob.content[0]
        assert isinstance(payload, types.TextContent) and payload.text == "x" * TEN_MB
        measured = await client.call_tool("k.measure", {"text": "y" * TEN_MB})
        assert measured.content[0] == types.TextContent(text=f"received {TEN_MB} chars")
        assert text_of(await client.call_tool("k.echo", {"text": "next"})) == "next"


async def test_dns_rebinding_a_foreign_host_or_origin_is_rejected_while_the_normal_client_works(
    kitchen_gateway: str,
) -> None:
    base = kitchen_gateway
    evil_host = await _post_initialize(base, {"host": "evil.example"})
    assert evil_host.status_code == 421
    evil_origin = await _post_initialize(base, {"origin": "http://evil.example"})
    assert evil_origin.status_code == 403
    local_origin = await _post_initialize(base, {"origin": base})
    assert local_origin.status_code == 200
    async with http_client(base) as client:
        assert text_of(await client.call_tool("k.echo", {"text": "local"})) == "local"


async def test_bearer_auth_rejects_clients_without_the_token_and_leaves_healthz_open(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"k": kitchen("k")})
    async with http_gateway(config, env={"GATEWAY_BEARER_TOKENS": "s3cret"}) as base:
        assert (await _post_initialize(base, {})).status_code == 401
        assert (await _post_initialize(base, {"authorization": "Bearer wrong"})).status_code == 401
        with pytest.raises(ExceptionGroup) as refused:  # the transport's task group carries it out
            async with http_client(base) as client:
                await client.list_tools()
        assert refused.group_contains(MCPError, match="bearer token", depth=2)
        async with http_client(base, headers={"authorization": "Bearer s3cret"}) as client:
            assert text_of(await client.call_tool("k.echo", {"text": "authorized"})) == "authorized"
        async with httpx2.AsyncClient() as http:
            assert (await http.get(f"{base}/healthz")).status_code == 200


async def test_every_answer_of_the_http_front_says_nosniff(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"k": kitchen("k")}, limits={"max_message_bytes": 1_000_000})
    async with http_gateway(config, env={"GATEWAY_BEARER_TOKENS": "s3cret"}) as base:
        token = {"authorization": "Bearer s3cret"}
        async with httpx2.AsyncClient(base_url=base, timeout=30) as http:
            answers = {
                "refused": await http.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS),  # 401, our own answer
                "sdk": await http.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS | token),
                "too big": await http.post("/mcp", content=b"x" * 1_000_001, headers=MCP_HEADERS | token),
                "health": await http.get("/healthz"),
                "page": await http.get("/ui", headers=token),
                "asset": await http.get("/ui/static/page.js"),
                "metrics": await http.get("/metrics", headers=token),
                "missing": await http.get("/nowhere", headers=token),  # Starlette's 404
            }
    assert [answer.status_code for answer in answers.values()] == [401, 200, 413, 200, 200, 200, 200, 404]
    assert {name: a.headers.get("x-content-type-options") for name, a in answers.items()} == dict.fromkeys(
        answers, "nosniff"
    )


async def test_an_oversized_http_message_gets_an_error_naming_the_limit_and_the_session_survives(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, {"k": kitchen("k")}, limits={"max_message_bytes": 2_000_000})
    async with http_gateway(config) as base, http_client(base) as client:
        with pytest.raises(MCPError) as rejected:
            await client.call_tool("k.measure", {"text": "z" * 3_000_000})
        assert "2,000,000" in rejected.value.message
        assert text_of(await client.call_tool("k.echo", {"text": "small"})) == "small"


async def test_legacy_sse_clients_are_served_at_sse_in_both_eras(kitchen_gateway: str) -> None:
    """Old HTTP+SSE clients connect at /sse; the same gateway answers them like any other client."""
    for mode in ("legacy", "auto"):
        async with Client(sse_client(f"{kitchen_gateway}/sse"), mode=mode) as client:
            assert "k.echo" in {t.name for t in (await client.list_tools()).tools}
            assert text_of(await client.call_tool("k.echo", {"text": f"via sse {mode}"})) == f"via sse {mode}"
