"""Run state durability: SIGKILLed writers never leave a partial file, stale writers get STATE_CONFLICT (in one
process and across processes), concurrent think.next calls lose no update, and names cannot escape the state dir."""

import json
import os
import random
import re
import subprocess
import sys
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from gateway.hosted.prompts import PromptLibrary
from gateway.store.backends import local_runs
from gateway.store.local.runs import LocalRuns
from gateway.store.local.spills import LocalSpills
from gateway.think.engine import Engine
from gateway.think.errors import ThinkError
from gateway.think.graphs import KnownTools
from gateway.think.library import Library
from gateway.think.runs import ATTEMPTS
from gateway.think.state import LATEST, LATEST_FIELD, RunState, StateStore, StepState
from gateway.think.validator import Schemas
from tests.harness import ROOT

pytestmark = pytest.mark.anyio

RUNS = ("r0", "r1", "r2")
WRITES = 200
OWNER = "tester"
TEMP = re.compile(r"\.(?P<run>.+)\.[A-Za-z0-9_]{8}\.tmp")
"""The only stray file a killed `StateStore.save` may leave: the `mkstemp` temp file of its run or, when it was
naming a new latest run, of the folder's pointer (`~latest`)."""

# Loads its runs from disk (so every round continues the last one), then saves growing states: captures of up to
# ~200 KB, one more step and history entry per write. `begin` before a save and `done <version>` after it tell the
# test where it was killed. With a pause index, that write's save stops after fsyncing its temp file (before the
# rename), prints `paused` and waits: the test's kill then lands mid-save for sure.
WRITER = """
import os, random, sys
from pathlib import Path
import anyio
from gateway.store.backends import local_runs
from gateway.think.state import RunState, StateStore, StepState

root, seed, writes, runs = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(",")
pause_at, current, real_fsync = int(sys.argv[5]), -1, os.fsync

def fsync(fd):
    real_fsync(fd)
    if current == pause_at:
        print("paused", flush=True)
        sys.stdin.readline()

os.fsync = fsync
rng = random.Random(seed)
store = StateStore(*local_runs(root))
OWNER = "tester"


async def main():
    global current
    states = {}
    for r in runs:
        fresh = RunState(owner=OWNER, workflow="crash", run_id=r)
        states[r] = await store.load(OWNER, "crash", r) if await store.exists(OWNER, "crash", r) else fresh
    for i in range(writes):
        current = i
        run = rng.choice(runs)
        state = states[run]
        state.captures[f"c{i % 4}"] = {"i": i, "blob": rng.choice("abc") * rng.randint(0, 200_000)}
        state.steps[f"s{state.version}"] = StepState(call="local.read", input={"i": i})
        state.log("write", detail=str(i))
        print("begin", run, flush=True)
        await store.save(state, expected_version=state.version)
        print("done", run, state.version, flush=True)

anyio.run(main)
"""

# Load -> count += 1 -> save, retrying on STATE_CONFLICT. Two of them run at once on one run: each says `ready`
# once imported, and starts on `go` (sent to both), so their updates overlap.
INCREMENTER = """
import sys
from pathlib import Path
import anyio
from gateway.think.errors import ThinkError
from gateway.store.backends import local_runs
from gateway.think.state import StateStore

store, count = StateStore(*local_runs(Path(sys.argv[1]))), int(sys.argv[2])
OWNER = "tester"
print("ready", flush=True)
sys.stdin.readline()


async def main():
    conflicts = 0
    for _ in range(count):
        while True:
            state = await store.load(OWNER, "counter", "shared")
            state.params["count"] += 1
            try:
                await store.save(state, expected_version=state.version)
                break
            except ThinkError as exc:
                assert exc.error_code == "STATE_CONFLICT", exc
                conflicts += 1
    print(conflicts, flush=True)

anyio.run(main)
"""

PAIR = """
name: pair
version: "1"
steps:
  - id: left
    call: prompt.say
    input_template: {text: "left"}
    capture_as: left_out
  - id: right
    call: local.read
    input_template: {path: "right.txt"}
    capture_as: right_out
  - id: join
    call: prompt.say
    input_template: {text: "{{ left_out.n }}+{{ right_out.n }}"}
"""
DRIVER = {"version": "stable-2025-11", "text": "the driver"}


def child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


async def read_line(out: BufferedByteReceiveStream) -> str | None:
    try:
        return (await out.receive_until(b"\n", 1024)).decode()
    except (anyio.EndOfStream, anyio.IncompleteRead):
        return None


async def failure(process: Process, lines: list[str]) -> str:
    assert process.stderr is not None
    err = b""
    while True:
        try:
            err += await process.stderr.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            break
    return f"writer ended after {len(lines)} lines (rc {await process.wait()}): {err.decode()[-2000:]}"


async def write_until_killed(script: Path, root: Path, seed: int, kill_after: int, pause_at: int) -> list[str]:
    """Run the writer, SIGKILL it once it printed `kill_after` lines or `paused`; every line it printed."""
    command = [sys.executable, str(script), str(root), str(seed), str(WRITES), ",".join(RUNS), str(pause_at)]
    async with await anyio.open_process(command, cwd=ROOT, env=child_env(), stderr=subprocess.PIPE) as process:
        assert process.stdout is not None
        out = BufferedByteReceiveStream(process.stdout)
        lines: list[str] = []
        while len(lines) < kill_after:
            line = await read_line(out)
            if line is None:
                pytest.fail(await failure(process, lines))
            lines.append(line)
            if line == "paused":
                break
        process.kill()
        assert await process.wait() == -9
        while (line := await read_line(out)) is not None:  # what it printed between our read and the kill
            lines.append(line)
        return lines


def check_files(root: Path, saved: dict[str, int], in_flight: str | None) -> list[str]:
    """Every run file is whole and at its last printed version (or one more for the run whose save was killed
    after its rename); the only other files are temp files of a run. Returns the runs of the temp files."""
    folder = root / f"{OWNER}~crash"
    temps: list[str] = []
    seen: set[str] = set()
    for path in folder.iterdir():
        if path.stem == LATEST:  # the pointer to the latest active run: whole too
            assert json.loads(path.read_bytes())[LATEST_FIELD] in RUNS
        elif path.suffix == ".json":
            state = RunState.model_validate_json(path.read_bytes())  # a partial file would not parse
            assert path.stem == state.run_id and state.run_id in RUNS
            run = state.run_id
            allowed = {saved[run], saved[run] + 1} if run == in_flight else {saved[run]}
            assert state.version in allowed, (run, state.version, saved, in_flight)
            assert len(state.steps) == state.version  # the file holds that version's state, not another's
            saved[run] = state.version
            seen.add(run)
        else:
            match = TEMP.fullmatch(path.name)
            assert match is not None and match["run"] in (*RUNS, LATEST), f"unexpected file {path.name}"
            temps.append(match["run"])
    assert seen == {run for run, version in saved.items() if version}
    assert [p.name for p in root.iterdir()] == [f"{OWNER}~crash"]
    return temps


async def test_a_writer_killed_at_random_points_leaves_only_whole_files_at_consistent_versions(
    tmp_path: Path,
) -> None:
    script = tmp_path / "writer.py"
    script.write_text(WRITER, encoding="utf-8")
    root = tmp_path / "state"
    rng = random.Random(1729)
    saved = dict.fromkeys(RUNS, 0)
    with anyio.fail_after(90):
        for round_ in range(5):
            paused = round_ % 2 == 1  # odd rounds: killed between fsync and rename; even ones: anywhere
            kill_after, pause_at = (10**6, rng.randrange(WRITES)) if paused else (rng.randint(1, 2 * WRITES - 1), -1)
            lines = await write_until_killed(script, root, round_, kill_after, pause_at)
            in_flight = None
            for line in lines:
                match line.split():
                    case ["begin", run]:
                        in_flight = run
                    case ["done", run, version]:
                        assert int(version) == saved[run] + 1, "each save is one version more, also across rounds"
                        saved[run], in_flight = int(version), None
                    case ["paused"]:
                        assert in_flight is not None
                    case _:
                        pytest.fail(f"unexpected line {line!r}")
            temps = check_files(root, saved, None if paused else in_flight)
            if paused:  # not renamed: the file is still the previous version, the new one is a stray temp file
                assert in_flight in temps
    # Temp files of killed saves are removed by the next write of their file (under the folder lock, so none is
    # live): a run's by its next save, the pointer's by the next naming of a latest run (a fresh store names one).
    pointer_temp = root / f"{OWNER}~crash" / f".{LATEST}.abcd_123.tmp"  # what a kill while naming one leaves
    pointer_temp.write_bytes(b'{"version": 3, "lat')
    assert LATEST in check_files(root, saved, None)
    store = StateStore(*local_runs(root))
    for run in RUNS:
        state = await store.load(OWNER, "crash", run)
        state.steps[f"s{state.version}"] = StepState(call="local.read")
        saved[run] = (await store.save(state, expected_version=state.version)).version
    assert check_files(root, saved, None) == []


async def test_the_next_save_of_a_run_removes_its_stale_temp_files_only(tmp_path: Path) -> None:
    store = StateStore(*local_runs(tmp_path))
    await store.save(RunState(owner=OWNER, workflow="w", run_id="r"), expected_version=0)
    folder = tmp_path / f"{OWNER}~w"
    stale = folder / ".r.abcd_123.tmp"
    stale.write_bytes(b'{"workflow": "w", "run_id": "r", "vers')  # what a SIGKILL mid-write leaves
    kept = [folder / ".r.x.abcd_123.tmp", folder / ".r.abc.tmp", folder / "notes.txt"]  # run "r.x"; not a temp
    for path in kept:
        path.write_bytes(b"x")
    assert (await store.load(OWNER, "w", "r")).version == 1  # load ignores temp files
    await store.save(await store.load(OWNER, "w", "r"), expected_version=1)
    assert not stale.exists()
    assert all(p.exists() for p in kept)
    assert [s.run_id for s in await store.runs(OWNER, "w")] == ["r"]


async def test_a_stale_writer_gets_state_conflict_and_the_first_update_is_kept(tmp_path: Path) -> None:
    a, b = StateStore(*local_runs(tmp_path)), StateStore(*local_runs(tmp_path))
    await a.save(RunState(owner=OWNER, workflow="w", run_id="r"), expected_version=0)
    mine, theirs = await a.load(OWNER, "w", "r"), await b.load(OWNER, "w", "r")
    mine.params["by"] = "a"
    await a.save(mine, expected_version=mine.version)
    theirs.params["by"] = "b"
    with pytest.raises(ThinkError) as caught:
        await b.save(theirs, expected_version=theirs.version)
    assert caught.value.error_code == "STATE_CONFLICT"
    assert "at version 2, expected 1" in str(caught.value.details) and caught.value.guidance
    kept = await b.load(OWNER, "w", "r")
    assert (kept.version, kept.params) == (2, {"by": "a"})
    with pytest.raises(ThinkError, match="STATE_CONFLICT"):  # a second plan of the same run id: no overwrite
        await b.save(RunState(owner=OWNER, workflow="w", run_id="r"), expected_version=0)


async def test_two_processes_updating_one_run_lose_no_update(tmp_path: Path) -> None:
    """The version check, write and rename happen under a folder lock: without it, both processes can read
    version v and both rename a version v+1 file (an increment lost, no STATE_CONFLICT; seen with 2 x 300)."""
    script = tmp_path / "incrementer.py"
    script.write_text(INCREMENTER, encoding="utf-8")
    root = tmp_path / "state"
    store = StateStore(*local_runs(root))
    await store.save(
        RunState(owner=OWNER, workflow="counter", run_id="shared", params={"count": 0}), expected_version=0
    )
    command = [sys.executable, str(script), str(root), "300"]
    with anyio.fail_after(60):
        async with (
            await anyio.open_process(command, cwd=ROOT, env=child_env()) as first,
            await anyio.open_process(command, cwd=ROOT, env=child_env()) as second,
        ):
            outs = [BufferedByteReceiveStream(p.stdout) for p in (first, second) if p.stdout is not None]
            for process, out in zip((first, second), outs, strict=True):
                assert await read_line(out) == "ready", await failure(process, [])
            for process in (first, second):
                assert process.stdin is not None
                await process.stdin.send(b"go\n")
            conflicts = [await read_line(out) for out in outs]
            assert [await first.wait(), await second.wait()] == [0, 0], conflicts
    final = await store.load(OWNER, "counter", "shared")
    assert (final.params["count"], final.version) == (600, 601), conflicts


# -- think.next through the Engine --------------------------------------------------------------------------


class CountingStore(StateStore):
    """Counts the saves that were refused with STATE_CONFLICT."""

    def __init__(self, root: Path) -> None:
        super().__init__(*local_runs(root))
        self.conflicts = 0

    async def save(self, state: RunState, expected_version: int) -> RunState:
        try:
            return await super().save(state, expected_version)
        except ThinkError as exc:
            self.conflicts += exc.error_code == "STATE_CONFLICT"
            raise


async def yielding_tools() -> frozenset[str]:
    """A catalog lookup that yields to the event loop, like the gateway's: another call can run meanwhile."""
    await anyio.lowlevel.checkpoint()
    return frozenset()


def engine_on(workflows: Path, store: StateStore, known_tools: KnownTools | None) -> Engine:
    return Engine(Library([workflows]), store, PromptLibrary(), schemas=Schemas([]), known_tools=known_tools)


@pytest.fixture
def workflows(tmp_path: Path) -> Path:
    folder = tmp_path / "workflows"
    folder.mkdir()
    (folder / "pair.yaml").write_text(PAIR, encoding="utf-8")
    return folder


async def planned(engine: Engine, run_id: str) -> None:
    """Plan a run of `pair` and complete the driver steps: `left` and `right` are then both ready."""
    assert (await engine.plan(OWNER, "pair", {}, run_id))["step_id"] == "__driver_bootstrap"
    assert (await engine.next(OWNER, "pair", run_id, "__driver_bootstrap", DRIVER))["step_id"] == "__driver_announce"
    answer = await engine.next(OWNER, "pair", run_id, "__driver_announce", {"message": "ok"})
    assert answer["step_id"] == "left" and answer["progress"] == {"done": 2, "total": 5}


async def both_at_once(calls: list[Callable[[], Awaitable[dict[str, Any]]]]) -> list[dict[str, Any]]:
    answers: list[dict[str, Any]] = []

    async def call(fn: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        answers.append(await fn())

    async with anyio.create_task_group() as tg:
        for fn in calls:
            tg.start_soon(call, fn)
    return answers


@pytest.mark.parametrize(
    ("engines", "known_tools"),
    [
        pytest.param(1, None, id="one-engine"),
        pytest.param(1, yielding_tools, id="one-engine-yielding"),
        pytest.param(2, None, id="two-engines"),  # the store's awaits alone would interleave them
        pytest.param(2, yielding_tools, id="two-engines-interleaved"),
    ],
)
async def test_concurrent_next_calls_on_one_run_lose_no_update(
    tmp_path: Path, workflows: Path, engines: int, known_tools: KnownTools | None
) -> None:
    """One engine serializes a run's calls (a per-run lock, state reloaded under it). Two engines on one state
    dir would interleave between load and save (the store's disk work runs in a worker thread; the catalog
    lookup yields too), but each holds the run's cross-process lock from load to save: no save conflicts."""
    store = CountingStore(tmp_path / "state")
    first, second = (engine_on(workflows, store, known_tools) for _ in range(2))
    pick = (first, first) if engines == 1 else (first, second)
    with anyio.fail_after(30):
        for n in range(12):
            run_id = f"run{n}"
            await planned(first, run_id)
            answers = await both_at_once(
                [
                    partial(pick[0].next, OWNER, "pair", run_id, "left", {"n": n, "side": "left"}),
                    partial(pick[1].next, OWNER, "pair", run_id, "right", {"n": n, "side": "right"}),
                ]
            )
            # The first to land is told to do the other step, the second gets `join` (rendered from both).
            assert {a["step_id"] for a in answers} in ({"right", "join"}, {"left", "join"})
            state = await store.load(OWNER, "pair", run_id)
            assert (state.steps["left"].status, state.steps["right"].status) == ("done", "done")
            assert state.captures["left_out"]["content"] == {"n": n, "side": "left"}
            assert state.captures["right_out"]["content"] == {"n": n, "side": "right"}
            assert state.version == 5  # plan, two driver steps, left, right
            last = await second.next(OWNER, "pair", run_id, "join", {"message": "said"})
            assert last["done"] is True and last["progress"] == {"done": 5, "total": 5}
            assert (await store.load(OWNER, "pair", run_id)).steps["join"].input == {"text": f"{n}+{n}"}
    assert store.conflicts == 0


class AlwaysBehind(StateStore):
    """Another writer lands before every save (as if a busy process shared the run)."""

    async def save(self, state: RunState, expected_version: int) -> RunState:
        if expected_version > 0:
            other = await self.load(state.owner, state.workflow, state.run_id)
            other.log("someone else")
            await super().save(other, expected_version=other.version)
        return await super().save(state, expected_version)


async def test_next_re_applies_up_to_its_bound_then_reports_state_conflict_and_the_step_stays_pending(
    tmp_path: Path, workflows: Path
) -> None:
    engine = engine_on(workflows, AlwaysBehind(*local_runs(tmp_path / "state")), None)
    assert (await engine.plan(OWNER, "pair", {}, "busy"))["step_id"] == "__driver_bootstrap"
    with pytest.raises(ThinkError) as caught:
        await engine.next(OWNER, "pair", "busy", "__driver_bootstrap", DRIVER)
    assert caught.value.error_code == "STATE_CONFLICT"
    state = await engine.store.load(OWNER, "pair", "busy")
    assert state.steps["__driver_bootstrap"].status == "pending"
    assert [h.event for h in state.history] == ["plan"] + ["someone else"] * ATTEMPTS  # re-applied, bounded


# -- names and ids --------------------------------------------------------------------------------------------

BAD_NAMES = [
    "",
    ".",
    "..",
    "../x",
    "../../etc/passwd",
    "a/b",
    "/abs",
    "x/..",
    "a..b",
    "..x",
    ".hidden",
    "a\\b",
    "a\x00b",
]


def files_under(folder: Path) -> set[Path]:
    return set(folder.rglob("*"))


@pytest.mark.parametrize("name", BAD_NAMES)
async def test_bad_workflow_names_and_run_ids_are_refused_and_write_nothing(
    tmp_path: Path, workflows: Path, name: str
) -> None:
    root = tmp_path / "deep" / "state"
    store = StateStore(*local_runs(root))
    engine = engine_on(workflows, store, None)
    before = files_under(tmp_path)
    good = RunState(owner=OWNER, workflow="pair", run_id="ok")
    path_calls: list[tuple[str, Callable[[], object]]] = [
        ("UNKNOWN_RUN", lambda: store.locked(OWNER, "pair", name)),
        ("UNKNOWN_WORKFLOW", lambda: store.folder(OWNER, name)),
        ("UNKNOWN_WORKFLOW", lambda: engine.library.get(name)),
    ]
    for code, path_call in path_calls:
        with pytest.raises(ThinkError) as caught:
            path_call()
        assert caught.value.error_code == code, (code, name)
    store_calls: list[tuple[str, Callable[[], Awaitable[object]]]] = [
        ("UNKNOWN_RUN", lambda: store.load(OWNER, "pair", name)),
        ("UNKNOWN_WORKFLOW", lambda: store.exists(OWNER, name, "ok")),
        ("UNKNOWN_RUN", lambda: store.save(good.model_copy(update={"run_id": name}), expected_version=0)),
        ("UNKNOWN_WORKFLOW", lambda: store.save(good.model_copy(update={"workflow": name}), expected_version=0)),
        ("UNKNOWN_RUN", lambda: store.delete(OWNER, "pair", name)),
        ("UNKNOWN_WORKFLOW", lambda: store.runs(OWNER, name)),
        ("UNKNOWN_WORKFLOW", lambda: engine.run_of(OWNER, name, None)),
    ]
    for code, call in store_calls:
        with pytest.raises(ThinkError) as caught:
            await call()
        assert caught.value.error_code == code, (code, name)
    engine_calls: list[tuple[str, Callable[[], Awaitable[object]]]] = [
        ("UNKNOWN_WORKFLOW", lambda: engine.plan(OWNER, name, {}, "ok")),
        ("UNKNOWN_WORKFLOW", lambda: engine.next(OWNER, name, "ok", "left", {})),
        ("UNKNOWN_RUN", lambda: engine.next(OWNER, "pair", name, "left", {})),
    ]
    if name:  # an empty run_id asks plan to generate one
        engine_calls.append(("UNKNOWN_RUN", lambda: engine.plan(OWNER, "pair", {}, name)))
    for code, acall in engine_calls:
        with pytest.raises(ThinkError) as caught:
            await acall()
        assert caught.value.error_code == code, (code, name)
    assert files_under(tmp_path) == before


class ReadCounting(LocalRuns):
    """Local run records that count how often a whole folder is read."""

    folder_reads = 0

    async def all(self, folder: str) -> list[bytes]:
        self.folder_reads += 1
        return await super().all(folder)


async def test_the_latest_active_run_is_found_without_reading_every_run(tmp_path: Path) -> None:
    records = ReadCounting(tmp_path)
    store = StateStore(records, LocalSpills(tmp_path))
    for run in ("a", "b", "c"):
        await store.save(RunState(owner=OWNER, workflow="w", run_id=run), expected_version=0)
    older = await store.load(OWNER, "w", "a")
    await store.save(older, expected_version=older.version)  # "a" is now the latest saved
    latest = await store.latest_active(OWNER, "w")
    assert latest is not None and latest.run_id == "a" and records.folder_reads == 0
    assert [s.run_id for s in await store.runs(OWNER, "w")] == ["a", "c", "b"]  # the pointer is no run
    records.folder_reads = 0
    latest.status = "done"
    await store.save(latest, expected_version=latest.version)
    after = await store.latest_active(OWNER, "w")  # the named run ended: the newest active of all of them
    assert after is not None and after.run_id == "c" and records.folder_reads == 1
    await store.delete(OWNER, "w", "c")
    found = await StateStore(ReadCounting(tmp_path), LocalSpills(tmp_path)).latest_active(OWNER, "w")
    assert found is not None and found.run_id == "b"  # another process, the named run gone


class RunReadCounting(LocalRuns):
    """Local run records that count how often one run's record is read."""

    reads = 0

    async def get(self, folder: str, name: str) -> bytes | None:
        self.reads += 1
        return await super().get(folder, name)


async def test_a_next_naming_its_run_reads_the_run_once(tmp_path: Path, workflows: Path) -> None:
    records = RunReadCounting(tmp_path / "state")
    engine = engine_on(workflows, StateStore(records, LocalSpills(tmp_path / "state")), None)
    await planned(engine, "once")
    records.reads = 0
    answer = await engine.next(OWNER, "pair", "once", "left", {"side": "l"})
    assert answer["run_id"] == "once" and records.reads == 1
