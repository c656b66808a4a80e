"""Observe answers from memory: a tool call no ready step waits for reads and writes nothing; only a match
loads the run (under its locks) and saves the observation. The engine's per-run structures stay bounded."""

from pathlib import Path
from typing import Any

import pytest

from gateway.hosted.prompts import PromptLibrary
from gateway.store.backends import local_runs
from gateway.think import graphs as graphs_module
from gateway.think.engine import Engine
from gateway.think.library import Library
from gateway.think.ready import ReadyIndex
from gateway.think.state import RunState, StateStore
from gateway.think.validator import Schemas

pytestmark = pytest.mark.anyio

ECHO = """
name: echo
version: "1"
steps:
  - id: first
    call: k.echo
    input_template: {text: "one"}
    capture_as: first_out
  - id: second
    call: k.echo
    input_template: {text: "two {{ first_out.text }}"}
"""
DRIVER = {"version": "stable-2025-11", "text": "the driver"}
OWNER = "tester"


class CountingStore(StateStore):
    def __init__(self, root: Path) -> None:
        super().__init__(*local_runs(root))
        self.loads = self.saves = 0

    async def load(self, owner: str, workflow: str, run_id: str) -> RunState:
        self.loads += 1
        return await super().load(owner, workflow, run_id)

    async def save(self, state: RunState, expected_version: int) -> RunState:
        self.saves += 1
        return await super().save(state, expected_version)


def engine_on(tmp_path: Path, store: StateStore) -> Engine:
    (tmp_path / "echo.yaml").write_text(ECHO)
    return Engine(Library([tmp_path]), store, PromptLibrary(), schemas=Schemas([]))


async def at_first(engine: Engine, run_id: str) -> dict[str, Any]:
    ins = await engine.plan(OWNER, "echo", {}, run_id)
    while ins["step_id"].startswith("__driver"):
        ins = await engine.next(OWNER, "echo", run_id, ins["step_id"], DRIVER)
    assert (ins["step_id"], ins["call"], ins["input"]) == ("first", "k.echo", {"text": "one"})
    return ins


async def test_calls_no_step_waits_for_touch_no_disk_and_a_match_records(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "state")
    engine = engine_on(tmp_path, store)
    await at_first(engine, "r")
    loads, saves = store.loads, store.saves
    for arguments in ({"text": "other"}, {"text": "one", "extra": 1}, None):
        assert await engine.observe(OWNER, "echo", "r", "k.echo", arguments, {"text": "x"}) is None
    for tool in ("k.other", "think.state.get", "prompt.say"):
        assert await engine.observe(OWNER, "echo", "r", tool, {"text": "one"}, {"text": "x"}) is None
    assert (store.loads, store.saves) == (loads, saves)  # six calls, not one read

    seen = await engine.observe(OWNER, "echo", "r", "k.echo", {"text": "one"}, {"text": "one"})
    assert seen is not None and seen.step_id == "first"
    assert (store.loads, store.saves) == (loads + 1, saves + 1)
    answer = await engine.next(OWNER, "echo", "r", "first")  # recorded by the gateway: no snapshot needed
    assert answer["input"] == {"text": "two one"}
    # the index moved on with the run: the old call is no longer watched, the new one is
    assert not await engine.runs.watches(OWNER, "echo", "r", "k.echo", {"text": "one"})
    assert await engine.runs.watches(OWNER, "echo", "r", "k.echo", {"text": "two one"})


async def test_a_run_the_engine_has_not_seen_is_read_once_then_answered_from_memory(tmp_path: Path) -> None:
    await at_first(engine_on(tmp_path, StateStore(*local_runs(tmp_path / "state"))), "r")
    store = CountingStore(tmp_path / "state")
    fresh = engine_on(tmp_path, store)  # another gateway process, or one restarted
    for _ in range(5):
        assert not await fresh.runs.watches(OWNER, "echo", "r", "k.other", {})
    assert await fresh.runs.watches(OWNER, "echo", "r", "k.echo", {"text": "one"})
    assert store.loads == 1


async def test_a_step_another_process_recorded_meanwhile_is_not_recorded_twice(tmp_path: Path) -> None:
    first = engine_on(tmp_path, StateStore(*local_runs(tmp_path / "state")))
    await at_first(first, "r")
    second = engine_on(tmp_path, StateStore(*local_runs(tmp_path / "state")))
    await second.next(OWNER, "echo", "r", "first", {"text": "reported"})  # first's index still shows `first` ready
    assert await first.observe(OWNER, "echo", "r", "k.echo", {"text": "one"}, {"text": "late"}) is None
    state = await first.store.load(OWNER, "echo", "r")
    assert state.steps["first"].status == "done" and "first" not in state.observed


async def test_per_run_structures_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(graphs_module, "GRAPHS", 3)
    engine = engine_on(tmp_path, StateStore(*local_runs(tmp_path / "state")))
    engine.runs.ready = ReadyIndex(size=5)
    for n in range(12):
        await engine.plan(OWNER, "echo", {}, f"r{n}")
        await engine.graph("echo", f"v{n}")  # a graph per driver version asked for (unknown ones fall back)
    assert len(engine.runs._locks) == 0  # a run's lock lives only while it is held or awaited
    assert len(engine.graphs) == 3
    assert len(engine.runs.ready) == 5
