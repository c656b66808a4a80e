"""Two gateway processes writing one run: contention is resolved inside the engine (the run's cross-process
lock, then a reload and re-apply), so no client ever sees a STATE_CONFLICT it did not cause and no update
is lost. Real processes, a real state folder, their writes overlapping."""

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from gateway.hosted.prompts import PromptLibrary
from gateway.store.backends import local_runs
from gateway.think.engine import Engine
from gateway.think.library import Library
from gateway.think.state import LATEST, StateStore
from gateway.think.validator import Schemas
from tests.harness import ROOT

pytestmark = pytest.mark.anyio

CHILDREN = 60
OWNER = "tester"
FAN = """
name: fan
version: "1"
inputs:
  items: {type: array, required: true}
limits: {keep_count: 100}  # every child's capture stays in the state, to be checked below
steps:
  - id: each
    call: local.note
    foreach: params.items
    input_template: {n: "{{ item }}"}
    capture_as: notes
"""
# One gateway's engine on the shared state folder: records every child step of its parity, then prints how
# many of its calls failed and with which codes (it starts on `go`, sent to both, so their writes overlap).
WRITER = """
import json, sys
from pathlib import Path
import anyio
from gateway.hosted.prompts import PromptLibrary
from gateway.think.engine import Engine
from gateway.think.errors import ThinkError
from gateway.think.library import Library
from gateway.store.backends import local_runs
from gateway.think.state import StateStore
from gateway.think.validator import Schemas

root, workflows, parity, children = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
engine = Engine(Library([workflows]), StateStore(*local_runs(root)), PromptLibrary(), schemas=Schemas([]))
OWNER = "tester"
print("ready", flush=True)
sys.stdin.readline()


async def main():
    failed = []
    for i in range(parity, children, 2):
        try:
            await engine.next(OWNER, "fan", "shared", f"each[{i}]", {"n": i, "by": parity})
        except ThinkError as exc:
            failed.append(exc.error_code)
    print(json.dumps(failed), flush=True)

anyio.run(main)
"""


def engine_on(workflows: Path, root: Path) -> Engine:
    return Engine(Library([workflows]), StateStore(*local_runs(root)), PromptLibrary(), schemas=Schemas([]))


async def test_two_processes_recording_steps_of_one_run_never_see_a_conflict(tmp_path: Path) -> None:
    workflows, root = tmp_path / "workflows", tmp_path / "state"
    workflows.mkdir()
    (workflows / "fan.yaml").write_text(FAN)
    (tmp_path / "writer.py").write_text(WRITER)
    engine = engine_on(workflows, root)
    ins = await engine.plan(OWNER, "fan", {"items": list(range(CHILDREN))}, "shared")
    while ins["step_id"].startswith("__driver"):  # the injected driver steps come first
        ins = await engine.next(OWNER, "fan", "shared", ins["step_id"], {"version": "stable-2025-11", "text": "ok"})
    assert ins["step_id"] == "each[0]"

    command = [sys.executable, str(tmp_path / "writer.py"), str(root), str(workflows)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with anyio.fail_after(60):
        async with (
            await anyio.open_process([*command, "0", str(CHILDREN)], cwd=ROOT, env=env) as even,
            await anyio.open_process([*command, "1", str(CHILDREN)], cwd=ROOT, env=env) as odd,
        ):
            outs = [BufferedByteReceiveStream(p.stdout) for p in (even, odd) if p.stdout is not None]
            for out in outs:
                assert await out.receive_until(b"\n", 100) == b"ready"
            for process in (even, odd):
                assert process.stdin is not None
                await process.stdin.send(b"go\n")
            failed = [json.loads(await out.receive_until(b"\n", 100_000)) for out in outs]
    assert failed == [[], []]  # not one STATE_CONFLICT (nor anything else) reached a client
    state = await engine.store.load(OWNER, "fan", "shared")
    children = {sid: st for sid, st in state.steps.items() if sid.startswith("each[")}
    assert len(children) == CHILDREN and all(st.status == "done" for st in children.values())
    assert sorted(state.captures[f"notes[{i}]"]["content"]["n"] for i in range(CHILDREN)) == list(range(CHILDREN))
    assert state.status == "done"


def test_the_state_folder_holds_only_run_files_and_run_folders(tmp_path: Path) -> None:
    """The cross-process lock lives in the run's own `<run_id>.files` folder: nothing else appears but the pointer to
    the latest active run."""
    root = tmp_path / "state"
    engine = engine_on(tmp_path, root)
    (tmp_path / "fan.yaml").write_text(FAN)

    async def run() -> None:
        await engine.plan(OWNER, "fan", {"items": [1]}, "r.json")
        await engine.plan(OWNER, "fan", {"items": [1]}, "r")

    anyio.run(run)
    assert sorted(p.name for p in (root / f"{OWNER}~fan").iterdir()) == [
        "r.files",
        "r.json",
        "r.json.files",
        "r.json.json",
        f"{LATEST}.json",
    ]
