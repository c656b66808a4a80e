"""Supervision through a real gateway: crashes, servers that cannot start, timeouts, no leaked processes."""

import json
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client

from tests.harness import (
    gateway_params,
    http_client,
    http_gateway,
    kitchen,
    pid_alive,
    text_of,
    wait_for,
    write_config,
)

pytestmark = pytest.mark.anyio

BAD = {"transport": "stdio", "command": "/nonexistent/binary"}


async def test_a_crash_mid_call_is_an_error_result_and_the_next_call_reaches_a_restarted_server(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, {"k": kitchen("k")})
    async with Client(gateway_params(config), mode="legacy") as client:
        before = text_of(await client.call_tool("k.pid", {}))
        with anyio.fail_after(1):  # a bound: in-flight calls fail at once, not at a timeout
            crashed = await client.call_tool("k.crash", {})
        assert crashed.is_error
        assert "'k'" in text_of(crashed) and "connection was lost" in text_of(crashed)
        with anyio.fail_after(15):
            echoed = await client.call_tool("k.echo", {"text": "back"})
        assert not echoed.is_error and text_of(echoed) == "back"
        assert text_of(await client.call_tool("k.pid", {})) != before


async def test_a_server_that_cannot_start_does_not_hide_the_others_and_status_reports_it(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"bad": BAD, "good": kitchen("good")})
    async with Client(gateway_params(config), mode="legacy") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "good.echo" in names and not any(n.startswith("bad.") for n in names)
        assert text_of(await client.call_tool("good.echo", {"text": "ok"})) == "ok"
        status = await client.call_tool("gateway.status", {})
    assert status.structured_content is not None
    servers = status.structured_content["servers"]
    assert servers["bad"]["state"] in ("down", "restarting")
    assert "/nonexistent/binary" in servers["bad"]["last_error"]
    assert servers["good"]["state"] == "up" and servers["good"]["tools"] >= 10


async def test_healthz_reports_the_server_that_cannot_start_as_down_and_the_good_one_up(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"bad": BAD, "good": kitchen("good")})
    async with http_gateway(config) as base:
        async with http_client(base) as client:
            assert text_of(await client.call_tool("good.echo", {"text": "ok"})) == "ok"
        async with httpx2.AsyncClient() as http:
            response = await http.get(f"{base}/healthz")
    assert response.status_code == 200 and response.headers["content-type"] == "application/json"
    health = json.loads(response.text)
    assert health["status"] == "degraded"
    bad, good = health["servers"]["bad"], health["servers"]["good"]
    assert bad["state"] in ("down", "restarting") and "/nonexistent/binary" in bad["last_error"]
    assert good["state"] == "up" and good["tools"] >= 10 and good["last_error"] is None


async def test_a_call_over_the_servers_timeout_is_an_error_result_naming_the_timeout(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"k": kitchen("k", timeout_s=1)})
    async with Client(gateway_params(config), mode="legacy") as client:
        with anyio.fail_after(5):
            result = await client.call_tool("k.hang", {})
        assert result.is_error
        assert "'k'" in text_of(result) and "1 s" in text_of(result) and "timeout_s" in text_of(result)
        assert text_of(await client.call_tool("k.echo", {"text": "still here"})) == "still here"


async def test_closing_the_stdio_gateway_leaves_no_server_or_grandchild_process(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"k": kitchen("k")})
    async with Client(gateway_params(config), mode="legacy") as client:
        server = int(text_of(await client.call_tool("k.pid", {})))
        grandchild = int(text_of(await client.call_tool("k.spawn_child", {})))
        assert pid_alive(server) and pid_alive(grandchild)
    await wait_for(lambda: not pid_alive(server) and not pid_alive(grandchild), within_s=10, what="no processes")


async def test_terminating_the_http_gateway_leaves_no_server_or_grandchild_process(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"k": kitchen("k")})
    async with http_gateway(config) as base:
        async with http_client(base) as client:
            server = int(text_of(await client.call_tool("k.pid", {})))
            grandchild = int(text_of(await client.call_tool("k.spawn_child", {})))
        assert pid_alive(server) and pid_alive(grandchild)
    await wait_for(lambda: not pid_alive(server) and not pid_alive(grandchild), within_s=10, what="no processes")
