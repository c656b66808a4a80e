"""`gateway prepare` and `gateway check` as real subprocesses: what was installed or reused, a failed install
named with its fix while the rest is installed, and per server what is missing with the command that fixes it."""

import os
import shutil
import subprocess
from pathlib import Path

import anyio
import pytest

from tests.harness import ROOT, gateway_command, write_config

# Real installs: tens of seconds each, minutes on a loaded machine (the suite's 120 s per test is for the rest).
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(400)]

TIME = "mcp-server-time==2026.10.19"
BAD = "mcp-server-time==0.0.999"
EVERYTHING = "@modelcontextprotocol/server-everything@2026.8.31"


async def gateway(*args: str, envs: Path, path: str | None = None) -> subprocess.CompletedProcess[bytes]:
    argv, environ = gateway_command(list(args), {**os.environ, "GATEWAY_ENVS": str(envs)})
    if path is not None:
        environ["PATH"] = path
    with anyio.fail_after(300):
        return await anyio.run_process(argv, cwd=str(ROOT), env=environ, check=False)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def envs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One environments folder for the module: the first test installs `TIME`, the next repairs and rebuilds it."""
    return tmp_path_factory.mktemp("envs")


async def test_prepare_installs_what_it_can_names_what_failed_then_reuses(tmp_path: Path, envs: Path) -> None:
    # Credentials are not needed to install: an unset variable does not stop `prepare` (it does `serve`).
    time = {"package": TIME, "env": {"TOKEN": "${GW_PREPARE_UNSET}"}}
    config = str(write_config(tmp_path, {"time": time, "bad": {"package": BAD}}))
    first = await gateway("prepare", "--config", config, envs=envs)
    out, err = first.stdout.decode(), first.stderr.decode()
    assert first.returncode == 1, err
    assert f"{config}: servers.time: package {TIME} installed with pip in " in out
    assert out.rstrip().endswith(str(envs / "pypi" / TIME / "bin" / "mcp-server-time"))
    assert f"{config}: servers.bad: error: server 'bad': installing package {BAD} failed: pip exited with 1:" in err
    assert "No matching distribution found" in err and "then run `gateway prepare bad`" in err
    stamp = envs / "pypi" / TIME / ".prepared"
    before = stamp.stat().st_mtime_ns

    again = await gateway("prepare", "--config", config, "time", envs=envs)
    assert again.returncode == 0, again.stderr.decode()
    said = again.stdout.decode()
    assert f"servers.time: package {TIME} already prepared and intact (" in said
    assert " files checked), nothing installed: " in said
    assert stamp.stat().st_mtime_ns == before


async def test_prepare_reinstalls_a_broken_environment_saying_what_was_broken_and_force_rebuilds_it(
    tmp_path: Path, envs: Path
) -> None:
    config = str(write_config(tmp_path, {"time": {"package": TIME}}))
    assert (await gateway("prepare", "--config", config, envs=envs)).returncode == 0  # reused after the test above
    package = next((envs / "pypi" / TIME).glob("lib/python*/site-packages")) / "mcp_server_time"
    shutil.rmtree(package)  # the stamp kept: it was "already prepared, nothing installed" (exit 0) and stayed broken

    checked = await gateway("check", "--config", config, envs=envs)
    err = checked.stderr.decode()
    assert checked.returncode == 0, err
    assert (
        f"{config}: servers.time: warning: package {TIME} is broken (mcp-server-time 2026.10.19: files missing (" in err
    )
    assert f"); now: gateway prepare --config {config} time" in err

    repaired = await gateway("prepare", "--config", config, envs=envs)
    out = repaired.stdout.decode()
    assert repaired.returncode == 0, repaired.stderr.decode()
    assert f"{config}: servers.time: package {TIME} was broken (mcp-server-time 2026.10.19: files missing (" in out
    assert "); reinstalled with pip in " in out
    assert (package / "server.py").is_file()

    forced = await gateway("prepare", "--config", config, "--force", envs=envs)
    assert forced.returncode == 0, forced.stderr.decode()
    assert f"{config}: servers.time: package {TIME} rebuilt (--force) with pip in " in forced.stdout.decode()


async def test_prepare_into_a_folder_that_cannot_be_written_says_so_in_one_line_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")  # a folder under a file: unwritable even for root
    config = str(write_config(tmp_path, {"time": {"package": TIME}}))
    done = await gateway("prepare", "--config", config, envs=tmp_path / "file" / "envs")
    err = done.stderr.decode()
    assert done.returncode == 1
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert (
        f"{config}: servers.time: error: server 'time': cannot install package {TIME}: the environments folder " in err
    )
    assert f"{tmp_path / 'file' / 'envs'} cannot be written (Not a directory: " in err
    assert err.rstrip().endswith(
        "set GATEWAY_ENVS to a folder this user can write, or give this user write permission on it"
    )


async def test_prepare_of_a_server_without_a_package_exits_2_naming_those_with_one(tmp_path: Path) -> None:
    servers = {"time": {"package": TIME}, "plain": {"transport": "stdio", "command": "python3"}}
    config = str(write_config(tmp_path, servers))
    done = await gateway("prepare", "--config", config, "plain", "nope", envs=tmp_path / "envs")
    assert done.returncode == 2
    expected = f"{config}: 'plain', 'nope': no server with package or npm by that name (they are: time)"
    assert done.stderr.decode().strip() == expected
    assert not (tmp_path / "envs").exists()


async def test_prepare_refuses_a_spec_outside_pep_508_before_anything_runs(tmp_path: Path) -> None:
    config = str(write_config(tmp_path, {"p": {"package": "name[a\n-e .]==1.0"}}))
    done = await gateway("prepare", "--config", config, envs=tmp_path / "envs")
    assert done.returncode == 1
    assert done.stderr.decode().startswith(
        f"{config}: servers.p.package: 'name[a\\n-e .]==1.0' is not a PEP 508 requirement (Expected matching "
    )
    assert not (tmp_path / "envs").exists()  # no folder made, no pip run


async def test_check_says_per_server_what_is_missing_and_the_command_that_fixes_it(tmp_path: Path) -> None:
    config = str(write_config(tmp_path, {"time": {"package": TIME}, "ev": {"npm": EVERYTHING}}))
    empty = tmp_path / "bin"
    empty.mkdir()
    done = await gateway("check", "--config", config, envs=tmp_path / "envs", path=str(empty))  # no npm, no node
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, err
    assert (
        f"{config}: servers.time: package {TIME} not prepared (serve installs it on first use); "
        f"now: gateway prepare --config {config} time"
    ) in out
    assert (
        f"{config}: servers.ev: warning: npm {EVERYTHING}: npm and node not on PATH; install Node.js (18 or newer) "
        f"with npm; then run: gateway prepare --config {config} ev"
    ) in err
    assert out.rstrip().endswith(f"{config}: ok (2 servers: ev, time)")
