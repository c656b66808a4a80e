"""The distribution: `python -m build` makes the sdist and, from it, the wheel; the wheel installed with `pipx` (its
own venv) outside the checkout serves the embedded default (with the shipped workflows and driver prompts) to a
real MCP client over stdio and over HTTP, and `gateway init` / `check` / `--version` work there."""

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import mcp.types as types
import pytest
from mcp import Client, StdioServerParameters

from tests.harness import ROOT, free_port, http_client, served, text_of

pytestmark = pytest.mark.anyio
SHIPPED = {"code_review_v1", "develop_ticket_v1", "review_local_v1"}


class Installed:
    def __init__(self, venv: Path, home: Path, wheel: Path) -> None:
        self.venv, self.home, self.wheel = venv, home, wheel  # home: a folder outside the checkout to run in
        self.env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        self.env["GATEWAY_DATA"] = str(home / "data")

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        argv = [str(self.venv / "bin" / "gateway"), *args]
        return subprocess.run(
            argv, cwd=self.home, env=self.env, capture_output=True, text=True, timeout=120, check=False
        )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    dist, home = tmp_path_factory.mktemp("dist"), tmp_path_factory.mktemp("home")
    build = [sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)]
    subprocess.run(build, check=True, capture_output=True, timeout=300)
    (sdist,) = dist.glob("mcp_doorway-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {n.split("/", 1)[1] for n in archive.getnames() if "/" in n}
    shipped = {"workflows/code_review_v1.yaml", "prompts/prompts.yml", "config/gateway.yaml"}
    assert shipped | {"config/expansions/mcp-gitlab.json"} <= names
    assert not any(n.startswith(("tests/", "bench/", "scripts/")) for n in names)
    (wheel,) = dist.glob("mcp_doorway-*-py3-none-any.whl")
    # Installed the way a user installs a Python tool: pipx, into its own venv and a bin folder of its own.
    python = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    pipx_env = {**os.environ, "PIPX_HOME": str(home / "pipx"), "PIPX_BIN_DIR": str(home / "bin")}
    pipx_env.pop("PYTHONPATH", None)
    pipx = [sys.executable, "-m", "pipx", "install", "--python", python, str(wheel)]
    subprocess.run(pipx, check=True, capture_output=True, timeout=600, env=pipx_env)
    venv = home / "pipx" / "venvs" / "mcp-doorway"
    assert (home / "bin" / "gateway").resolve() == (venv / "bin" / "gateway").resolve()
    yield Installed(venv, home, wheel)


def test_the_installed_gateway_is_the_wheel_not_the_checkout(installed: Installed) -> None:
    where = [str(installed.venv / "bin" / "python"), "-c", "import gateway, adapters; print(gateway.__file__)"]
    done = subprocess.run(where, cwd=installed.home, env=installed.env, capture_output=True, text=True, check=True)
    assert done.stdout.startswith(str(installed.venv)) and not done.stdout.startswith(str(ROOT))
    assert installed.run("--version").stdout.strip().startswith("gateway 0.1.0")


def test_the_installed_gateway_reads_its_shipped_expansion_packs(installed: Installed) -> None:
    code = (
        "from gateway.middleware.exposure.expansions import description_hash, packs_folder, shipped_for; "
        "print(packs_folder()); "
        "print(shipped_for('convert_time', description_hash('Convert time between timezones'))[0])"
    )
    where = [str(installed.venv / "bin" / "python"), "-c", code]
    done = subprocess.run(where, cwd=installed.home, env=installed.env, capture_output=True, text=True, check=True)
    folder, request = done.stdout.splitlines()
    assert folder.startswith(str(installed.venv)) and request  # the wheel's own copy, and a request read from it


async def test_the_installed_wheel_serves_the_embedded_default_over_stdio(installed: Installed) -> None:
    params = StdioServerParameters(
        command=str(installed.venv / "bin" / "gateway"), args=["serve"], cwd=installed.home, env=installed.env
    )
    with anyio.fail_after(90):
        async with Client(params, mode="legacy") as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"git.git_status", "time.get_current_time", "think.workflows.list"} <= names
            now = await client.call_tool("time.get_current_time", {"timezone": "UTC"})
            assert not now.is_error and '"timezone": "UTC"' in text_of(now)
            flows = await client.call_tool("think.workflows.list", {})
            assert not flows.is_error and all(name in text_of(flows) for name in SHIPPED)
            prompt = await client.call_tool("think.driver_prompt", {})
            assert not prompt.is_error and "stable-2025-11" in text_of(prompt)


async def test_the_installed_wheel_serves_the_embedded_default_over_http(installed: Installed) -> None:
    base = f"127.0.0.1:{free_port()}"
    argv = [str(installed.venv / "bin" / "gateway"), "serve", "--http", base, "--log-level", "WARNING"]

    async def ready() -> str | None:
        return f"http://{base}" if await _up(f"http://{base}/healthz") else None

    async with served(argv, ready, "installed gateway", cwd=installed.home, env=installed.env) as url:
        async with http_client(url, mode="legacy") as client:
            now = await client.call_tool("time.get_current_time", {"timezone": "UTC"})
            assert not now.is_error and isinstance(now.content[0], types.TextContent)
            flows = await client.call_tool("think.workflows.list", {})
            assert all(name in text_of(flows) for name in SHIPPED)


@pytest.mark.timeout(300)  # a fresh uv cache downloads the wheel's dependencies (~5 s here; a slow index, longer)
async def test_an_entry_connected_from_uvx_starts_the_gateway_once_uv_deleted_its_environment(
    installed: Installed, tmp_path: Path
) -> None:
    """`uvx --from WHEEL gateway connect` runs from an environment in uv's cache: the entry it prints runs `uv tool
    run` from the same wheel (not that environment's `gateway`), so it still starts once uv has deleted it."""
    uvx, uv = Path(sys.executable).parent / "uvx", Path(sys.executable).parent / "uv"
    # uv's own roots would not know a CA the machine trusts (an intercepting proxy's): the machine's store, as pip's.
    env = {**installed.env, "UV_CACHE_DIR": str(tmp_path / "uv-cache"), "UV_SYSTEM_CERTS": "1"}
    argv = [str(uvx), "--from", str(installed.wheel), "gateway", "connect", "claude-code"]
    with anyio.fail_after(300):
        printed = await anyio.run_process(argv, cwd=installed.home, env=env)
    entry = json.loads(printed.stdout)["mcpServers"]["gateway"]
    assert await anyio.Path(entry["command"]).samefile(uv)  # the uv beside the uvx that ran it
    assert entry["args"] == ["tool", "run", "--from", str(installed.wheel), "gateway", "serve"]
    ran_from = re.search(r"runs from uv's cache \(([^)]+)\)", printed.stderr.decode())
    assert ran_from is not None and "uv tool install mcp-doorway" in printed.stderr.decode()
    shutil.rmtree(ran_from[1])  # the environment it ran from, gone
    params = StdioServerParameters(command=entry["command"], args=entry["args"], cwd=installed.home, env=env)
    with anyio.fail_after(120):
        async with Client(params, mode="legacy") as client:
            assert "git.git_status" in {t.name for t in (await client.list_tools()).tools}


async def _up(url: str) -> bool:
    try:
        async with httpx2.AsyncClient(timeout=1) as http:
            return (await http.get(url)).status_code == 200
    except httpx2.HTTPError:
        return False


def test_init_outside_the_checkout_writes_a_config_that_checks_and_owns_its_workflows(installed: Installed) -> None:
    folder = installed.home / "mine"
    done = installed.run("init", str(folder))
    assert done.returncode == 0, done.stderr
    assert {p.name for p in (folder / "workflows").glob("*.yaml")} == {f"{n}.yaml" for n in SHIPPED}
    checked = installed.run("check", "--config", str(folder / "gateway.yaml"))
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.strip() == f"{folder / 'gateway.yaml'}: ok (2 servers: git, time)"
    assert "not on PATH" not in checked.stderr  # the default's servers came with the wheel
    again = installed.run("init", str(folder))
    assert again.returncode == 1 and "already exist" in again.stderr and "init writes only new files" in again.stderr
