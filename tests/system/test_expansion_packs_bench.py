"""bench.expansion_packs over a whole gateway and real servers: which tools have a shipped pack entry for their current
text, and its exit status (0 only when every tool has one; 2 when a server is not up, after waiting for its first
start, an install included)."""

import re
import shutil
from pathlib import Path

import anyio
import pytest

from bench.expansion_packs import report
from tests.harness import PYTHON, ROOT, write_config
from tests.held_install import SPEC, held_install

pytestmark = pytest.mark.anyio


async def test_it_exits_zero_when_every_tool_has_an_entry_and_names_a_tool_that_has_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    covered = {"git": {"transport": "stdio", "command": shutil.which("mcp-server-git") or "mcp-server-git"}}
    state = {"state_dir": str(tmp_path / "state")}
    assert await report(write_config(tmp_path, covered, think=state)) == 0
    assert "git: 12 of 12 tools have a pack entry for their current text" in capsys.readouterr().out

    bare = {
        **covered,
        "catalog": {"transport": "stdio", "command": PYTHON, "args": [str(ROOT / "tests/servers/catalog.py")]},
    }
    assert await report(write_config(tmp_path, bare, think=state)) == 1
    out = capsys.readouterr().out
    assert "catalog: 0 of 1 tools have a pack entry" in out and "no entry: list_versions (description_sha256 " in out


async def test_it_waits_for_a_server_still_installing_and_counts_its_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Start-up serves without it (`startup_wait_s: 0`, as any install longer than the default 10 s): the report
    waits for the install instead of counting no tools and exiting 0."""
    state = {"state_dir": str(tmp_path / "state")}
    config = write_config(tmp_path, {"held": {"package": SPEC}}, limits={"startup_wait_s": 0}, think=state)
    done: list[int] = []
    async with held_install(tmp_path / "held", monkeypatch) as held:
        with anyio.fail_after(200):
            async with anyio.create_task_group() as tg:

                async def run() -> None:
                    done.append(await report(config))
                    tg.cancel_scope.cancel()  # a report that did not wait ends the wait for the install below

                tg.start_soon(run)
                await held.started()
                held.release()
    assert done == [1]  # the kitchen server's tools have no pack entries
    assert "held: 0 of " in capsys.readouterr().out


async def test_servers_that_are_not_up_are_named_and_the_exit_status_is_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    covered = {"git": {"transport": "stdio", "command": shutil.which("mcp-server-git") or "mcp-server-git"}}
    missing = {"transport": "stdio", "command": str(tmp_path / "no-such-server")}
    state = {"state_dir": str(tmp_path / "state")}
    assert await report(write_config(tmp_path, {**covered, "gone": missing}, think=state), wait_s=60) == 2
    out, err = capsys.readouterr()
    assert "git: 12 of 12 tools have a pack entry for their current text" in out
    assert "1 server is not up, so their tools are not counted (each one's first start was waited for" in err
    # "down" in its backoff, "restarting" in its next attempt
    cannot = f"FileNotFoundError: cannot start MCP server '{tmp_path / 'no-such-server'}'"
    assert re.search(rf"\n  gone \((down|restarting)\): {re.escape(cannot)}", err), err


async def test_a_server_still_installing_when_the_wait_ends_is_named_as_starting_and_the_exit_status_is_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    state = {"state_dir": str(tmp_path / "state")}
    config = write_config(tmp_path, {"held": {"package": SPEC}}, limits={"startup_wait_s": 0}, think=state)
    async with held_install(tmp_path / "held", monkeypatch):  # never released
        assert await report(config, wait_s=1) == 2
    assert capsys.readouterr().err.endswith(
        "1 server is not up, so their tools are not counted (each one's first start was waited for, up to --wait "
        "1 s):\n  held (starting): its install or first handshake has not ended\n"
    )
