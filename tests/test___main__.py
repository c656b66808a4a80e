"""The `gateway` command's start (`gateway.__main__.run`)."""

import subprocess
import sys
from pathlib import Path

from tests.harness import ROOT, write_config

SHOW = (
    "import gc, sys; from gateway.__main__ import run; sys.argv = ['gateway', *sys.argv[1:]]; code = run(); "
    "print(code, gc.get_freeze_count(), gc.isenabled())"
)


def test_the_command_runs_with_what_its_imports_built_kept_out_of_the_collectors_passes(tmp_path: Path) -> None:
    config = write_config(tmp_path, {})
    argv = [sys.executable, "-c", SHOW, "check", "--config", str(config)]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    *_, last = done.stdout.splitlines()
    code, frozen, enabled = last.split()
    assert (code, enabled) == ("0", "True"), done.stderr  # collecting again once started
    assert int(frozen) > 50_000  # the imports' objects, frozen
