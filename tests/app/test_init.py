"""`gateway init` writes its files whole, through the same writer as `connect --write`, and leaves nothing
half-made when a write fails."""

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.app.init import init
from tests.harness import ROOT, unmeasured


def test_a_write_cut_short_leaves_no_half_made_starter_and_says_so_in_one_line(tmp_path: Path) -> None:
    assert shutil.which("prlimit"), "util-linux's prlimit is needed"
    folder = tmp_path / "mine"
    argv = ["prlimit", "--fsize=2048", sys.executable, "-m", "gateway", "init", str(folder)]
    env = {**unmeasured(), "PYTHONPATH": str(ROOT)}  # under the limit coverage could not save its data either
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gateway init: cannot ") and "File too large" in lines[0]
    assert lines[0].endswith("; nothing was written")
    assert list(folder.iterdir()) == []  # no config without its workflows, no hidden copy left behind
    again = subprocess.run(argv[2:], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert again.returncode == 0, again.stderr  # and so a second try, without the limit, is not refused


def test_the_starter_files_get_the_users_default_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert init(tmp_path / "mine") == 0
    umask = os.umask(0o022)
    os.umask(umask)
    for name in ("gateway.yaml", "versions.json"):
        assert stat.S_IMODE((tmp_path / "mine" / name).stat().st_mode) == 0o666 & ~umask
    assert "wrote " in capsys.readouterr().out
