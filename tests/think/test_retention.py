"""Bounded run state: captures no remaining step reads leave the state file (kept in the spill store), a spilled
value is not also kept whole, `keep_count` is seed 001's retention count, and the file stays flat over 200 steps;
yet the run stays whole: it replays, names all its results, and rolls back to any step it passed."""

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from gateway.think.workflow import parse
from tests.think.harness import body_of, gateway_on, past_driver, runs_folder

pytestmark = pytest.mark.anyio

LONG = """\
name: long_v1
version: "1"
limits: {keep_count: 5}
steps:
  - id: each
    call: local.work
    foreach: "{{ params.items }}"
    input_template: {n: "{{ item }}"}
    capture_as: chunk
  - id: last
    call: local.work
    deps: [each]
    input_template: {done: true}
"""


async def run_long(client: Any, sizes: dict[int, int], state_dir: Path) -> dict[str, Any]:
    """Run long_v1 over 200 items, each answered with a 1 KB snapshot; `sizes`: the state file's after each step."""
    plan = {"workflow": "long_v1", "params": {"items": list(range(200))}}
    ins = await past_driver(client, body_of(await client.call_tool("think.plan", plan)))
    done = 0
    while not ins["done"]:
        ref = {"workflow": "long_v1", "run_id": ins["run_id"], "step_id": ins["step_id"]}
        ins = body_of(await client.call_tool("think.next", {**ref, "result_snapshot": {"log": f"{done}" * 1_000}}))
        done += 1
        sizes[done] = (runs_folder(state_dir, "long_v1") / f"{ins['run_id']}.json").stat().st_size
    assert done == 201
    return ins


@dataclass(frozen=True, slots=True)
class LongRun:
    """A finished 200-item run of long_v1: its last instruction, the state file's size after each step, and the
    state file and spills as the run left them."""

    folder: Path
    final: dict[str, Any]
    sizes: dict[int, int]
    state: dict[str, Any]
    spills: int


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module-scoped: `long_run` is


@pytest.fixture(scope="module")
async def long_run(tmp_path_factory: pytest.TempPathFactory) -> LongRun:
    """One 200-item run for the tests below (a second one only repeated 200 steps, each written and fsynced):
    what the run left is read here, before a test rolls it back."""
    folder, sizes = tmp_path_factory.mktemp("long"), dict[int, int]()
    async with gateway_on(folder, {"long_v1": LONG}) as client:
        final = await run_long(client, sizes, folder / "state")
    runs = runs_folder(folder / "state", "long_v1")
    state = json.loads((runs / f"{final['run_id']}.json").read_text())
    spills = len(list((runs / f"{final['run_id']}.files").glob("each_*.json.gz")))
    return LongRun(folder, final, sizes, state, spills)


async def test_the_state_file_stays_flat_over_a_200_step_run(long_run: LongRun) -> None:
    sizes, state = long_run.sizes, long_run.state
    # 140 more steps add only their status, result hash and time (~60 bytes each): no capture, checkpoint or
    # history growth (steps 50 and 190 hold as many checkpoints: they are spilled 20 at a time). Kept whole,
    # the 140 captures alone would add 140 KB.
    assert sizes[190] - sizes[50] < 140 * 80, (sizes[50], sizes[190])
    assert len(state["captures"]) == 5  # keep_count: the 5 most recent (the default pruning ranks them)
    assert len(state["checkpoints"]) < 40 and len(state["history"]) == 100
    assert len(state["checkpoints"]) + 20 * state["checkpoint_chunks"] == 203  # two driver steps, 200 items, last
    evicted = [h for h in state["history"] if h["event"] == "evict"]
    assert evicted and evicted[-1]["detail"].endswith(": read by no remaining step")
    assert long_run.spills == 200 - 5  # every capture that left is kept by reference in the spill store


async def test_a_200_item_run_replays_names_every_result_and_rolls_back_to_its_first_step(long_run: LongRun) -> None:
    final = long_run.final
    async with gateway_on(long_run.folder, {"long_v1": LONG}) as client:  # a gateway started on the run's state
        ref = {"workflow": "long_v1", "run_id": final["run_id"]}
        replayed = body_of(await client.call_tool("think.debug", {**ref, "action": "replay"}))
        back = body_of(await client.call_tool("think.reset", {**ref, "checkpoint": "__driver_bootstrap"}))
        state = body_of(await client.call_tool("think.state.get", ref))["state"]
    # The driver's capture (read by the announce step) and 195 chunks left the state long ago: the replay reads
    # them from their spills, and every step renders the input it was given.
    assert replayed["identical"] is True, [s for s in replayed["steps"] if not s["same"]][:3]
    assert len(replayed["steps"]) == 203
    names = [f"chunk[{i}]" for i in range(200)]
    assert final["artifacts"] == names  # step order, every one: not only the 5 still in the state
    results = final["results"]
    assert [results[n]["kept"] for n in names] == ["evicted"] * 195 + ["inline"] * 5
    read = anyio.Path(results["chunk[0]"]["read"])
    assert json.loads(gzip.decompress(await read.read_bytes())) == {"log": "0" * 1_000}
    assert final["workflow_version"] == "1" and final["state_hash"].startswith("sha256:")
    # Rolled back past 200 steps: to the first one the run passed.
    assert back["instruction"]["step_id"] == "__driver_announce"
    assert state["status"] == "active" and state["checkpoints"] == ["__driver_bootstrap"]
    assert list(state["captures"]) == ["__driver"]


CHAIN = """\
name: chain_v1
version: "1"
limits: {cleanup_strategy: {type: most_recent, keep_count: 0}, external_storage_threshold: 1000}
steps:
  - {id: a, call: local.work, input_template: {}, capture_as: first}
  - {id: b, call: local.work, input_template: {seen: "{{ first.log | length }}"}, capture_as: second}
  - {id: c, call: local.work, input_template: {}, capture_as: third}
"""


async def snapshot_step(client: Any, ins: dict[str, Any], snap: Any) -> dict[str, Any]:
    ref = {"workflow": ins["workflow"], "run_id": ins["run_id"], "step_id": ins["step_id"]}
    return body_of(await client.call_tool("think.next", {**ref, "result_snapshot": snap}))


async def test_a_capture_leaves_once_nothing_reads_it_and_a_rollback_brings_it_back(tmp_path: Path) -> None:
    async with gateway_on(tmp_path, {"chain_v1": CHAIN}) as client:
        ins = await past_driver(client, body_of(await client.call_tool("think.plan", {"workflow": "chain_v1"})))
        ins = await snapshot_step(client, ins, {"log": "x" * 5_000})  # a: over the spill threshold
        ref = {"workflow": "chain_v1", "run_id": ins["run_id"]}
        held = body_of(await client.call_tool("think.state.get", ref))["state"]["captures"]["first"]
        assert ins["input"] == {"seen": 5_000}  # b renders from the whole value
        ins = await snapshot_step(client, ins, {"ok": 1})  # b done: nothing left reads `first`
        after_b = body_of(await client.call_tool("think.state.get", ref))["state"]["captures"]
        back = body_of(await client.call_tool("think.reset", {**ref, "checkpoint": "a"}))["instruction"]
        restored = body_of(await client.call_tool("think.state.get", ref))["state"]["captures"]
    # a spilled value is a preview in the state, not also the whole value
    assert held["truncated"] is True and held["file_path"] and len(json.dumps(held["content"])) < 1_100
    assert after_b == {}  # keep_count 0: `first` has no reader left, nor has `second` (c reads nothing)
    assert back["step_id"] == "b" and back["input"] == {"seen": 5_000}  # rendered from the spill store
    assert restored["first"]["file_path"] == held["file_path"]


def test_keep_count_is_the_retention_count_not_the_context_count() -> None:
    seed = {"name": "s_v1", "version": "1", "limits": {"cleanup_strategy": {"type": "lru", "keep_count": 10}}}
    workflow = parse({**seed, "steps": [{"id": "a", "call": "local.x"}]}, "s_v1.yaml")
    assert workflow.limits == {"pruning": "lru", "keep_count": 10}
    assert yaml.safe_load(LONG)["limits"] == {"keep_count": 5}


EVERY = """\
name: every_v1
version: "1"
hooks: {post_task: [{checkpoint_and_prune: {every: 4, strategy: most_recent, keep_count: 0}}]}
steps:
  - {id: each, call: local.work, foreach: "{{ params.items }}", input_template: {n: "{{ item }}"}, capture_as: c}
  - {id: last, call: local.work, deps: [each], input_template: {}}
"""


async def test_seed_001s_prune_cadence_prunes_every_n_steps_only(tmp_path: Path) -> None:
    async with gateway_on(tmp_path, {"every_v1": EVERY}) as client:
        plan = {"workflow": "every_v1", "params": {"items": list(range(6))}}
        ins = await past_driver(client, body_of(await client.call_tool("think.plan", plan)))
        held: list[int] = []
        for _ in range(6):
            ins = await snapshot_step(client, ins, {"ok": 1})
            ref = {"workflow": "every_v1", "run_id": ins["run_id"]}
            state = body_of(await client.call_tool("think.state.get", ref))["state"]
            held.append(len([k for k in state["captures"] if k.startswith("c[")]))
    # The clock counts the two driver steps too: pruned after steps 4 and 8 (items 2 and 6), kept in between.
    assert held == [1, 0, 1, 2, 3, 0]
