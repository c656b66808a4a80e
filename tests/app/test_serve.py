"""`gateway serve --http HOST:PORT` (`gateway.app.serve.http`): an address it cannot listen on is said at once, before
any server is started; port 0 serves on the one the system chose, and the log says which."""

import os
import re
import socket
from pathlib import Path

import anyio
import httpx2
import pytest

from tests.harness import cli, gateway_command, kitchen, write_config

pytestmark = pytest.mark.anyio


def test_an_address_in_use_is_said_with_what_to_do_and_exits_1_before_anything_starts(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"k": kitchen("k")})
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen(1)
        port = other.getsockname()[1]
        done = cli("serve", "--config", str(config), "--http", f"127.0.0.1:{port}")
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"gateway serve: cannot listen on 127.0.0.1:{port} (Address already in use); give --http an address of this "
        "machine and a port no other program listens on (another gateway may be serving there)."
    )


@pytest.mark.parametrize("given", ["abc", "127.0.0.1:", "127.0.0.1:99999", ":8765x", "127.0.0.1:-1"])
@pytest.mark.parametrize("option", ["--http", "--ui"])
def test_an_address_that_is_not_host_and_port_is_refused_with_an_example(option: str, given: str) -> None:
    done = cli("serve", option, given)
    assert done.returncode == 2
    assert f"{option}: {given!r} is not HOST:PORT with a port from 0 to 65535 (127.0.0.1:8765)" in done.stderr


def test_an_address_not_of_this_machine_is_said(tmp_path: Path) -> None:
    done = cli("serve", "--config", str(write_config(tmp_path, {})), "--http", "192.0.2.1:8765")  # TEST-NET-1
    assert done.returncode == 1
    assert done.stderr.startswith("gateway serve: cannot listen on 192.0.2.1:8765 (Cannot assign requested address)")


async def test_port_0_serves_on_the_port_the_system_chose_and_the_log_names_it(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"k": kitchen("k")}, think={"enabled": False})
    argv, env = gateway_command(["serve", "--config", str(config), "--http", "127.0.0.1:0"], os.environ)
    with anyio.fail_after(60):
        async with await anyio.open_process(argv, env=env) as process:
            assert process.stderr is not None
            said = ""
            while (serving := re.search(r"serving http://127\.0\.0\.1:(\d+)/mcp", said)) is None:
                said += (await process.stderr.receive()).decode()
            async with httpx2.AsyncClient() as http:
                health = await http.get(f"http://127.0.0.1:{serving[1]}/healthz")
            process.terminate()
    assert int(serving[1]) != 0 and health.status_code == 200
