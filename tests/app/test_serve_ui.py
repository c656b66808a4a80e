"""`gateway serve --ui HOST:PORT`: a stdio session's gateway serves the page and /metrics beside it, showing the
calls that session made, to callers on this machine only (no auth configured); `--ui` with `--http` is refused
(the page is at /ui there)."""

import re
import socket
import subprocess
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import stdio_client

from gateway.session import os_user
from tests.harness import PYTHON, ROOT, free_port, gateway_params, kitchen, text_of, write_config
from tests.think.harness import FIXTURES

pytestmark = pytest.mark.anyio


async def answering(url: str) -> httpx2.Response:
    """The first answer of `url` from a server another process is starting (its socket offers no event)."""
    async with httpx2.AsyncClient(timeout=5) as http:
        with anyio.fail_after(30):
            while True:
                try:
                    return await http.get(url)
                except httpx2.ConnectError:
                    await anyio.sleep(0.05)


async def test_the_page_beside_a_stdio_session_shows_its_calls(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"k": kitchen("k")}, think={"enabled": False})
    port = free_port()
    params = gateway_params(config)
    params.args = [*params.args, "--ui", f"127.0.0.1:{port}"]
    async with Client(params) as client:
        await client.call_tool("k.echo", {"text": "from stdio"})
        calls = await answering(f"http://127.0.0.1:{port}/ui/calls")
        metrics = await answering(f"http://127.0.0.1:{port}/metrics")
        mcp = await answering(f"http://127.0.0.1:{port}/mcp")
        async with httpx2.AsyncClient(timeout=5) as http:
            forwarded = await http.get(f"http://127.0.0.1:{port}/ui/calls", headers={"Forwarded": "for=203.0.113.7"})
    assert calls.status_code == 200 and "k.echo" in calls.text and 'data-outcome="ok"' in calls.text
    assert "script-src 'self'" in calls.headers["content-security-policy"]
    assert 'mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",gen_ai_tool_name="k.echo"} 1' in (
        metrics.text
    )
    assert mcp.status_code == 404  # the page only: MCP stays on stdio
    assert forwarded.status_code == 403 and "only" in forwarded.text  # no auth: callers on this machine only
    assert forwarded.headers["x-content-type-options"] == "nosniff"


async def test_a_page_address_already_in_use_leaves_the_session_without_its_page_and_says_so(tmp_path: Path) -> None:
    """Another window's gateway has the port: this one's session goes on (uvicorn's own bind would have ended it)."""
    config = write_config(tmp_path, {"k": kitchen("k")}, think={"enabled": False})
    params, port = gateway_params(config), free_port()
    with socket.socket() as other, (tmp_path / "stderr").open("w+") as stderr:
        other.bind(("127.0.0.1", port))
        other.listen(1)
        params.args = [*params.args, "--ui", f"127.0.0.1:{port}"]
        with anyio.fail_after(60):
            async with Client(stdio_client(params, errlog=stderr)) as client:
                echoed = await client.call_tool("k.echo", {"text": "still here"})
                assert not echoed.is_error and text_of(echoed) == "still here"
        stderr.seek(0)
        said = stderr.read()
    assert f"the page is not served: cannot listen on 127.0.0.1:{port}" in said, said
    assert "Give --ui an address of this machine and a port no other program listens on" in said


def test_ui_with_http_is_refused_with_a_reason(tmp_path: Path) -> None:
    config = write_config(tmp_path, {})
    argv = [PYTHON, "-m", "gateway", "serve", "--config", str(config), "--http", "127.0.0.1:1", "--ui", "127.0.0.1:2"]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT)}, timeout=60)
    assert done.returncode == 2
    assert "--ui is for a stdio session" in done.stderr


async def test_the_page_beside_a_stdio_session_is_its_users_with_their_outputs_and_runs(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        {"k": kitchen("k")},
        limits={"max_inline_bytes": 2000, "outputs_dir": str(tmp_path / "outputs")},
        think={"state_dir": str(tmp_path / "think"), "workflows_dirs": [str(FIXTURES)]},
    )
    port = free_port()
    params = gateway_params(config)
    params.args = [*params.args, "--ui", f"127.0.0.1:{port}"]
    async with Client(params) as client:
        await client.call_tool("k.blob", {"n": 30_000})
        plan = await client.call_tool("think.plan", {"workflow": "loop_v1", "params": {"files": ["a.py"]}})
        assert isinstance(plan.structured_content, dict)
        run_id = plan.structured_content["run_id"]
        calls = await answering(f"http://127.0.0.1:{port}/ui/calls")
        ref = re.findall(r'<tr data-call="([0-9a-f]+-\d+)"', calls.text)[-1]
        detail = await answering(f"http://127.0.0.1:{port}/ui/calls/{ref}")
        think = await answering(f"http://127.0.0.1:{port}/ui/think")
    assert f"{os_user().name} · admin" in calls.text  # the page's viewer is the stdio session's OS user
    assert "30,000 bytes stored" in detail.text and 'id="stored-error"' not in detail.text  # their own output
    assert f'data-run="{run_id}"' in think.text  # the run the session just started
