"""A run keeps the workflow it was planned with: editing the file changes new runs only; think.state.get says
which version a run follows and whether a newer one exists; think.reset {migrate: true} moves a run on."""

import os
from pathlib import Path

import pytest

from tests.think.harness import body_of, failure, gateway_on, past_driver

pytestmark = pytest.mark.anyio

V1 = """\
name: edited_v1
version: "1"
steps:
  - {id: a, call: local.work, input_template: {n: 1}, capture_as: first}
  - {id: b, call: local.work, deps: [a], input_template: {text: "old {{ first.v }}"}}
"""
V2 = """\
name: edited_v1
version: "2"
steps:
  - {id: a, call: local.work, input_template: {n: 1}, capture_as: first}
  - {id: b, call: local.work, deps: [a], input_template: {text: "new {{ first.v }}"}}
  - {id: c, call: local.work, deps: [b], input_template: {}}
"""


def edit(folder: Path, text: str) -> None:
    path = folder / "edited_v1.yaml"
    before = path.stat().st_mtime_ns
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(before + 1_000_000_000, before + 1_000_000_000))  # the library re-reads on a new mtime


async def step(client: object, ins: dict[str, object], snap: dict[str, object]) -> dict[str, object]:
    ref = {"workflow": "edited_v1", "run_id": ins["run_id"], "step_id": ins["step_id"]}
    return body_of(await client.call_tool("think.next", {**ref, "result_snapshot": snap}))  # type: ignore[attr-defined]


async def test_a_run_keeps_its_version_when_the_file_is_edited_and_moves_on_only_when_migrated(tmp_path: Path) -> None:
    async with gateway_on(tmp_path, {"edited_v1": V1}) as client:
        old = await past_driver(client, body_of(await client.call_tool("think.plan", {"workflow": "edited_v1"})))
        old = await step(client, old, {"v": 7})  # a done on version 1; b is next
        edit(tmp_path / "workflows", V2)
        new = await past_driver(client, body_of(await client.call_tool("think.plan", {"workflow": "edited_v1"})))
        run = {"workflow": "edited_v1", "run_id": old["run_id"]}
        pin = body_of(await client.call_tool("think.state.get", run))["state"]["workflow_pin"]
        replayed = body_of(await client.call_tool("think.debug", {**run, "action": "replay"}))
        moved = body_of(await client.call_tool("think.reset", {**run, "migrate": True}))
        after = body_of(await client.call_tool("think.state.get", run))["state"]["workflow_pin"]
        last = await step(client, moved["instruction"], {"ok": True})
        # checkpoints were of the old version: a rollback does not cross a migration
        failure(await client.call_tool("think.reset", {**run, "checkpoint": "a"}), "CHECKPOINT_NOT_FOUND")
    assert old["step_id"] == "b" and old["input"] == {"text": "old 7"} and old["workflow_version"] == "1"
    assert new["workflow_version"] == "2"  # a new run takes the file as it is
    assert pin["version"] == "1" and pin["newer_exists"] is True and pin["hash"] != pin["current_hash"]
    assert "migrate: true" in pin["migrate"]
    assert replayed["identical"] is True  # replayed on the version it ran on, not the edited file
    assert moved["migrated"] == {
        "kept": ["__driver_bootstrap", "__driver_announce", "a"],
        "added": ["c"],
        "dropped": [],
    }
    assert moved["instruction"]["step_id"] == "b" and moved["instruction"]["input"] == {"text": "new 7"}
    assert after["version"] == "2" and after["newer_exists"] is False
    assert last["step_id"] == "c"
