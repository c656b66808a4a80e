"""bench.expansion_packs over a whole gateway and real servers: which tools have a shipped pack entry for their current
text, and its exit status (0 only when every tool has one)."""

import shutil
from pathlib import Path

import pytest

from bench.expansion_packs import report
from tests.harness import PYTHON, ROOT, write_config

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
