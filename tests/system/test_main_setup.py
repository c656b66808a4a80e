"""The main job (`./scripts/run`) needs Python alone: its set-up, run with nothing but Python on PATH (no npm,
redis-server, haproxy, apt-get, not even a shell), installs a gateway that serves the embedded default's servers."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.harness import ROOT


def only_on_path(folder: Path, **tools: str) -> str:
    """A PATH of one folder holding links to exactly `tools` (name -> the real program)."""
    folder.mkdir()
    for name, real in tools.items():
        (folder / name).symlink_to(real)
    return str(folder)


def test_main_setup_installs_a_serving_gateway_with_nothing_but_python_on_path(tmp_path: Path) -> None:
    python = os.path.realpath(getattr(sys, "_base_executable", sys.executable))  # the interpreter, not this venv's
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    venv = tmp_path / "venv"
    env |= {"PATH": only_on_path(tmp_path / "bin", python3=python), "VENV": str(venv)}
    for tool in ("npm", "node", "redis-server", "haproxy", "apt-get", "bash", "sh"):
        assert shutil.which(tool, path=env["PATH"]) is None
    done = subprocess.run([ROOT / "scripts" / "setup"], env=env, capture_output=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert f"installing the gateway into {venv}" in done.stderr.decode()

    again = subprocess.run([ROOT / "scripts" / "setup"], env=env, capture_output=True, timeout=60, check=False)
    assert again.returncode == 0 and again.stderr == b""  # set up already: nothing to do

    # The default's servers start from the venv alone; mcp-server-git drives the git program, as any git tool does.
    env["PATH"] = only_on_path(tmp_path / "bin2", python3=python, git=shutil.which("git") or "/usr/bin/git")
    env["GATEWAY_DATA"] = str(tmp_path / "data")
    tools = subprocess.run(
        [venv / "bin" / "gateway", "tools", "--json"], env=env, capture_output=True, timeout=120, check=False
    )
    assert tools.returncode == 0, tools.stderr.decode()
    report = json.loads(tools.stdout)
    assert (report["servers"]["git"]["state"], report["servers"]["time"]["state"]) == ("up", "up")
    assert {"git.git_status", "time.get_current_time", "think.workflows.list"} <= {
        row["name"] for row in report["tools"]
    }
