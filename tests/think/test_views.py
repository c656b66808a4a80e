"""Views for workflow authors: the step graph (think.explain without a run, or view: graph) and think.debug's
actions, replay included: a finished run replayed on its own captures is identical (the engine is
deterministic), and the replay names the step whose input changed when the workflow file was edited since."""

from pathlib import Path

import anyio
import pytest

from tests.think.harness import body_of, failure, gateway_on, run_naively

pytestmark = pytest.mark.anyio

FLOW = """\
name: flow_v1
version: "1"
inputs:
  files: {type: array, required: true}
  loud: {type: boolean, default: false}
steps:
  - id: each
    call: k.echo
    foreach: params.files
    input_template: {text: "{{ item }}"}
    capture_as: echoes
  - id: shout
    call: prompt.say
    when: "{{ params.loud }}"
    input_template: {text: LOUD}
  - id: tell
    call: prompt.say
    input_template: {text: "{{ echoes | length }} echoed, first {{ echoes[0].text }}"}
    capture_as: told
"""


async def test_explain_without_a_run_gives_the_graph_with_entries_deps_and_markers(tmp_path: Path) -> None:
    async with gateway_on(tmp_path, {"flow_v1": FLOW}) as client:
        view = body_of(await client.call_tool("think.explain", {"workflow": "flow_v1"}))
        ins = body_of(await client.call_tool("think.plan", {"workflow": "flow_v1", "params": {"files": ["a"]}}))
        during = body_of(await client.call_tool("think.explain", {"workflow": "flow_v1", "view": "graph"}))
        progress = body_of(await client.call_tool("think.explain", {"workflow": "flow_v1"}))
    assert view == during and progress["run_id"] == ins["run_id"]  # the run's progress unless the graph is asked
    assert view["entry"] == ["__driver_bootstrap"] and view["inputs"] == ["files", "loud"]
    assert view["file"].endswith("flow_v1.yaml")
    assert view["order"] == ["__driver_bootstrap", "__driver_announce", "each", "shout", "tell"]
    nodes = {n["step_id"]: n for n in view["nodes"]}
    assert nodes["each"] == {
        "step_id": "each",
        "call": "k.echo",
        "deps": ["__driver_announce"],
        "capture_as": "echoes",
        "when": None,
        "foreach": "params.files",
        "entry": False,
    }
    assert nodes["shout"]["when"] == "{{ params.loud }}"
    assert nodes["tell"]["deps"] == ["__driver_announce", "each"]  # the implicit dep from the template


async def test_replaying_a_finished_run_gives_the_same_steps_and_names_an_edited_template(tmp_path: Path) -> None:
    async with gateway_on(tmp_path, {"flow_v1": FLOW}) as client:
        final, taken = await run_naively(client, "flow_v1", {"files": ["a.py", "b.py"]})
        ref = {"workflow": "flow_v1", "run_id": final["run_id"]}
        report = body_of(await client.call_tool("think.debug", {**ref, "action": "replay"}))
        assert report["identical"] is True and report["status_changes"] == {}
        assert [s["step_id"] for s in report["steps"]] == taken  # every completed step, in the order it completed
        assert all(s["same"] for s in report["steps"])

        history = body_of(await client.call_tool("think.debug", {**ref, "action": "history"}))
        assert "tell" in history["checkpoints"] and "diff" not in history
        failure(await client.call_tool("think.debug", {**ref, "action": "diff"}), "INVALID_PARAMS")
        diff = body_of(await client.call_tool("think.debug", {**ref, "action": "diff", "from_step": "each[0]"}))
        assert diff["diff"]["tell"] == {"from": "pending", "to": "done"}

        # the author edits a template after the run: the replay points at the step and both inputs
        path = anyio.Path(tmp_path / "workflows" / "flow_v1.yaml")
        await path.write_text(FLOW.replace("echoed, first", "echoed; the first was"), encoding="utf-8")
        pinned = body_of(await client.call_tool("think.debug", {**ref, "action": "replay"}))
    # the run keeps the version it ran on (identical); against the file as it is now, the edit shows
    assert pinned["identical"] is True
    report = pinned["current_file"]
    assert report["identical"] is False
    changed = [s for s in report["steps"] if not s["same"]]
    assert changed == [
        {
            "step_id": "tell",
            "same": False,
            "why": "another input",
            "recorded": {"text": "2 echoed, first a.py"},
            "replayed": {"text": "2 echoed; the first was a.py"},
        }
    ]
