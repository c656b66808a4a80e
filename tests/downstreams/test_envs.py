"""`package:`/`npm:` servers get environments of their own, installed for real (pip from the machine's index, npm
from its cache) into a temporary `$GATEWAY_ENVS`: prepared on first use by the serving gateway, reused after, and
a bad pin leaves that one server down with an error naming the package, the tool and the fix."""

import fcntl
import logging
import os
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client

from gateway.app.gateway import Gateway
from gateway.config import StdioServerConfig
from gateway.downstreams.envs import Env
from gateway.downstreams.pool import Pool
from gateway.downstreams.state import State
from gateway.errors import PrepareFailed
from tests.harness import connected, kitchen, text_of, write_config

# Real installs: tens of seconds each, minutes on a loaded machine (the suite's 120 s per test is for the rest).
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(400)]

TIME = "mcp-server-time==2026.10.19"
BAD = "mcp-server-time==0.0.999"
EVERYTHING = "@modelcontextprotocol/server-everything@2026.8.31"
NEEDS_NPM = pytest.mark.skipif(
    shutil.which("npm") is None or shutil.which("node") is None, reason="npm and node are not on PATH here"
)
# Installs take tens of seconds on a busy machine: start-up waits for them rather than serving without them.
SLOW_START = {"startup_wait_s": 240}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("envs")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GATEWAY_ENVS", str(home))
        yield home


@pytest.fixture(scope="module")
async def served(home: Path, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Gateway, Client]]:
    """One gateway serving a package server from an empty cache, a bad pin and a plain server beside them."""
    servers = {"time": {"package": TIME}, "bad": {"package": BAD}, "k": kitchen("k")}
    config = write_config(tmp_path_factory.mktemp("gateway"), servers, limits=SLOW_START)
    async with connected(config, within_s=300) as (gateway, client):
        yield gateway, client


def time_env(home: Path) -> Env:
    env = Env.of("time", StdioServerConfig(transport="stdio", package=TIME), home)
    assert env is not None
    return env


async def test_a_pypi_server_is_installed_on_first_use_and_served_through_the_gateway(
    served: tuple[Gateway, Client], home: Path
) -> None:
    gateway, client = served
    result = await client.call_tool("time.get_current_time", {"timezone": "UTC"})
    assert not result.is_error, text_of(result)
    assert '"timezone": "UTC"' in text_of(result)
    env = time_env(home)
    assert env.ready() and env.root == home / "pypi" / TIME
    assert env.command() == str(home / "pypi" / TIME / "bin" / "mcp-server-time")
    assert gateway.registry.downstreams["time"].state is State.UP


async def test_a_bad_pin_leaves_that_server_down_with_a_clear_error_while_the_others_serve(
    served: tuple[Gateway, Client],
) -> None:
    gateway, client = served
    bad = gateway.registry.downstreams["bad"]
    assert bad.state in (State.DOWN, State.RESTARTING)
    error = bad.last_error or ""
    assert f"server 'bad': installing package {BAD} failed: pip exited with 1" in error
    assert "No matching distribution found for mcp-server-time==0.0.999" in error  # the tail of pip's output
    assert "pip index versions mcp-server-time" in error and "gateway prepare bad" in error
    echoed = await client.call_tool("k.echo", {"text": "still here"})
    assert text_of(echoed) == "still here"
    refused = await client.call_tool("bad.anything", {})
    assert refused.is_error


async def test_a_second_prepare_installs_nothing(served: tuple[Gateway, Client], home: Path) -> None:
    env = time_env(home)
    stamp, packages = env.root / ".prepared", next(env.root.glob("lib/python*/site-packages"))
    before = (stamp.stat().st_mtime_ns, packages.stat().st_mtime_ns)
    done = await env.prepare()
    # An install would have rewritten the stamp and added to site-packages (its folder's mtime moves).
    assert (done.reused, done.tool) == (True, "")
    assert (stamp.stat().st_mtime_ns, packages.stat().st_mtime_ns) == before


async def test_a_failed_install_is_not_run_again_on_every_reconnect(tmp_path: Path) -> None:
    env = Env("bad", "pypi", BAD, None, tmp_path)
    with pytest.raises(PrepareFailed, match="No matching distribution"):
        await env.ensure()
    shutil.rmtree(env.root)  # what the failed install left: a second one would create it again
    with pytest.raises(PrepareFailed, match="No matching distribution"):
        await env.ensure()
    assert not env.root.exists()


async def test_two_users_processes_of_one_package_server_wait_for_one_install_not_refuse_each_other(
    tmp_path: Path,
) -> None:
    """A per-user server's processes share its environment: the second waits for the first's install (here one that
    fails fast), it is not told another process is installing."""
    env = Env("bad", "pypi", BAD, None, tmp_path)
    said: list[str] = []

    async def ensure() -> None:
        try:
            await env.ensure()
        except PrepareFailed as exc:
            said.append(str(exc))

    async with anyio.create_task_group() as tg:
        tg.start_soon(ensure)
        tg.start_soon(ensure)
    assert len(said) == 2 and all("No matching distribution" in why for why in said), said


async def test_a_package_without_the_named_program_is_down_naming_the_programs_it_has(
    served: tuple[Gateway, Client], tmp_path: Path
) -> None:
    config = write_config(tmp_path, {"wrong": {"package": TIME, "command": "mcp-time"}, "k": kitchen("k")})
    async with connected(config, within_s=60) as (gateway, client):  # the environment `served` prepared
        wrong = gateway.registry.downstreams["wrong"]
        assert wrong.state in (State.DOWN, State.RESTARTING)
        assert text_of(await client.call_tool("k.echo", {"text": "served"})) == "served"
    error = wrong.last_error or ""
    assert f"server 'wrong': package {TIME} has no program 'mcp-time'; it has " in error
    assert "mcp-server-time" in error and "Set servers.wrong.command to one of them" in error


@NEEDS_NPM
async def test_an_npm_server_is_installed_with_npm_and_served_through_the_gateway(home: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path, {"ev": {"npm": EVERYTHING}}, limits=SLOW_START)
    async with connected(config, within_s=300) as (gateway, client):
        result = await client.call_tool("ev.get-sum", {"a": 2, "b": 3})
        assert not result.is_error, (text_of(result), gateway.registry.downstreams["ev"].last_error)
        assert "5" in text_of(result)
    root = home / "npm" / "@modelcontextprotocol+server-everything@2026.8.31"
    assert (root / ".prepared").is_file() and (root / "node_modules" / ".bin" / "mcp-server-everything").exists()


def everything_env(home: Path) -> Env:
    env = Env.of("ev", StdioServerConfig(transport="stdio", npm=EVERYTHING), home)
    assert env is not None
    return env


@NEEDS_NPM
async def test_a_broken_npm_folder_is_reinstalled_by_prepare_saying_what_was_broken(home: Path) -> None:
    env = everything_env(home)
    await env.prepare()  # installed by the test above (or now, when run alone)
    shutil.rmtree(env.root / "node_modules" / "zod")
    done = await env.prepare()
    assert (done.reused, done.tool) == (False, "npm")
    assert done.repaired.startswith("1 of the ") and done.repaired.endswith(" (e.g. node_modules/zod)")
    assert env.check().problems == []


@NEEDS_NPM
async def test_a_broken_folder_that_cannot_be_reinstalled_here_says_what_is_broken_and_what_is_missing(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepared = everything_env(home)
    await prepared.prepare()
    copy = tmp_path / "npm" / prepared.root.name
    shutil.copytree(prepared.root, copy, symlinks=True, copy_function=os.link)  # hard links: instant
    shutil.rmtree(copy / "node_modules" / "zod")
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))  # no npm, no node
    with pytest.raises(PrepareFailed) as caught:
        await everything_env(tmp_path).prepare()
    message = str(caught.value)
    assert message.startswith(f"server 'ev': npm {EVERYTHING} is broken (1 of the ")
    assert message.endswith(
        " (e.g. node_modules/zod)) and cannot be reinstalled: npm and node not on PATH; install Node.js (18 or newer) "
        "with npm; then run `gateway prepare ev` (with the same --config), or restart the gateway"
    )


async def test_a_per_user_package_server_installs_on_its_first_user_s_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GATEWAY_ENVS", str(tmp_path / "envs"))
    monkeypatch.setenv("GW_ENVS_TOKEN", "mine")  # on stdio the OS user's environment fills `${user:…}`
    pooled = {"package": TIME, "env": {"TOKEN": "${user:GW_ENVS_TOKEN}"}, "connect_timeout_s": 240}
    config = write_config(tmp_path, {"time": pooled})
    async with connected(config, within_s=300) as (gateway, client):
        result = await client.call_tool("time.get_current_time", {"timezone": "UTC"})
        assert not result.is_error, text_of(result)
        pool = gateway.registry.downstreams["time"]
        assert isinstance(pool, Pool) and pool.processes == 1
    assert (tmp_path / "envs" / "pypi" / TIME / ".prepared").is_file()


async def test_a_spec_another_process_is_installing_leaves_that_server_starting_later_while_the_others_serve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GATEWAY_ENVS", str(tmp_path / "envs"))
    lock = tmp_path / "envs" / "pypi" / f"{TIME}.lock"
    lock.parent.mkdir(parents=True)
    with lock.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # as `gateway prepare` beside this gateway would, mid-install
        config = write_config(tmp_path, {"time": {"package": TIME}, "k": kitchen("k")})
        async with connected(config, within_s=60) as (gateway, client):
            assert text_of(await client.call_tool("k.echo", {"text": "served"})) == "served"
            time = gateway.registry.downstreams["time"]
            assert time.state in (State.DOWN, State.RESTARTING)
            assert f"server 'time': package {TIME} is being installed by another process now" in (time.last_error or "")
    assert not (tmp_path / "envs" / "pypi" / TIME).exists()  # it left the other's install alone


async def test_a_prepared_environment_missing_its_program_is_called_broken_with_the_command_that_repairs_it(
    served: tuple[Gateway, Client], home: Path, tmp_path: Path
) -> None:
    """Not "set command to one of them": the package declares that program, the folder lost it."""
    copy = tmp_path / "pypi" / TIME
    shutil.copytree(time_env(home).root, copy, symlinks=True, copy_function=os.link)  # hard links: instant
    (copy / "bin" / "mcp-server-time").unlink()  # its stamp kept
    env = Env.of("time", StdioServerConfig(transport="stdio", package=TIME), tmp_path)
    assert env is not None and env.ready()
    with pytest.raises(PrepareFailed) as caught:
        env.command()
    assert str(caught.value) == (
        f"server 'time': package {TIME} is broken (mcp-server-time 2026.10.19: files missing (bin/mcp-server-time)); "
        "run `gateway prepare time` (with the same --config), which reinstalls it"
    )


async def test_an_environments_folder_that_cannot_be_written_is_one_error_naming_it_and_what_to_do(
    tmp_path: Path,
) -> None:
    (tmp_path / "file").write_text("")  # a folder under a file: unwritable even for root
    home = tmp_path / "file" / "envs"
    env = Env("time", "pypi", TIME, None, home)
    with pytest.raises(PrepareFailed) as caught:
        await env.prepare()
    message = str(caught.value)
    assert message.startswith(f"server 'time': cannot install package {TIME}: the environments folder {home} ")
    assert f"cannot be written (Not a directory: {home / 'pypi'})" in message
    assert message.endswith(
        "set GATEWAY_ENVS to a folder this user can write, or give this user write permission on it"
    )


async def test_a_broken_environment_in_a_folder_that_cannot_be_written_says_what_is_broken_and_why_it_stays(
    served: tuple[Gateway, Client], home: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "pypi" / TIME
    shutil.copytree(time_env(home).root, copy, symlinks=True, copy_function=os.link)  # hard links: instant
    (copy / "bin" / "mcp-server-time").unlink()
    (tmp_path / "pypi" / f"{TIME}.lock").mkdir()  # its lock file cannot be made: as in a folder this user cannot write
    with pytest.raises(PrepareFailed) as caught:
        await Env("time", "pypi", TIME, None, tmp_path).prepare()
    assert str(caught.value) == (
        f"server 'time': package {TIME} is broken (mcp-server-time 2026.10.19: files missing (bin/mcp-server-time)) "
        f"and cannot be reinstalled: the environments folder {tmp_path} cannot be written (Is a directory: "
        f"{tmp_path / 'pypi' / (TIME + '.lock')}); set GATEWAY_ENVS to a folder this user can write, or give this "
        "user write permission on it"
    )


async def test_a_server_whose_program_was_deleted_is_reinstalled_when_it_starts_and_the_log_says_what_was_broken(
    served: tuple[Gateway, Client], home: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Last in this module: it reinstalls the environment the others share (and leaves it intact)."""
    env = time_env(home)
    (env.root / "bin" / "mcp-server-time").unlink()  # its stamp kept
    config = write_config(tmp_path, {"again": {"package": TIME}}, limits=SLOW_START)
    with caplog.at_level(logging.WARNING, logger="gateway.downstreams.envs"):
        async with connected(config, within_s=300) as (gateway, client):
            result = await client.call_tool("again.get_current_time", {"timezone": "UTC"})
            assert not result.is_error, (text_of(result), gateway.registry.downstreams["again"].last_error)
    assert (
        f"server again: package {TIME} is broken (mcp-server-time 2026.10.19: files missing (bin/mcp-server-time)); "
        "reinstalling it"
    ) in caplog.text
    assert env.check().problems == [] and env.ready()
