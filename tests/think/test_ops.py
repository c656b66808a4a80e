"""Think's tools besides plan and next (`Operations`), in process on a real state folder: explain a run and a step,
reset to a checkpoint (and refuse clearing without force, or an unknown checkpoint, naming those there are), the
run's state and the owner's runs, validate a workflow or a result, and debug's history and diff."""

from pathlib import Path
from typing import Any

import pytest

from gateway.think import tools
from gateway.think.errors import ThinkError
from gateway.think.ops import Operations
from tests.think.engines import OWNER, engine_on, planned

pytestmark = pytest.mark.anyio

THREE = """
name: three
version: "1"
steps:
  - {id: a, call: k.echo, input_template: {text: "a"}, capture_as: a_out}
  - {id: b, call: k.echo, input_template: {text: "{{ a_out.text }}b"}, capture_as: b_out}
  - {id: c, call: k.echo, input_template: {text: "{{ b_out.text }}c"}}
"""
BROKEN = """
name: broken
version: "1"
steps:
  - {id: a, call: prompt.say, deps: [nowhere]}
"""


async def ops_at_c(tmp_path: Path) -> Operations:
    engine = engine_on(tmp_path, {"three": THREE, "broken": BROKEN})
    await planned(engine, "three")
    await engine.next(OWNER, "three", "r", "a", {"text": "a"})
    await engine.next(OWNER, "three", "r", "b", {"text": "ab"})
    return Operations(engine)


def args(model: type[Any], **fields: Any) -> Any:
    return model.model_validate(fields)


async def test_explain_shows_the_run_and_a_step_with_what_it_waits_for(tmp_path: Path) -> None:
    ops = await ops_at_c(tmp_path)
    run = await ops.explain(OWNER, args(tools.Explain, workflow="three", run_id="r"))
    assert (run["ready"], run["progress"]) == (["c"], {"done": 4, "total": 5})
    step = await ops.explain(OWNER, args(tools.Explain, workflow="three", run_id="r", step_id="c"))
    assert (step["status"], step["input"], step["depends_on"], step["waiting_on"]) == (
        "pending",
        {"text": "abc"},
        ["__driver_announce", "b"],
        [],
    )
    with pytest.raises(ThinkError) as unknown:
        await ops.explain(OWNER, args(tools.Explain, workflow="three", run_id="r", step_id="z"))
    assert unknown.value.error_code == "UNKNOWN_STEP"


async def test_reset_rolls_back_to_a_checkpoint_and_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    ops = await ops_at_c(tmp_path)
    back = await ops.reset(OWNER, args(tools.Reset, workflow="three", run_id="r", checkpoint="a"))
    assert back["instruction"]["note"] == "rolled back to after step a"
    assert (back["instruction"]["step_id"], back["instruction"]["input"]) == ("b", {"text": "ab"})
    with pytest.raises(ThinkError) as nowhere:
        await ops.reset(OWNER, args(tools.Reset, workflow="three", run_id="r", checkpoint="zz"))
    assert (nowhere.value.error_code, nowhere.value.guidance) == (
        "CHECKPOINT_NOT_FOUND",
        "Checkpoints: __driver_bootstrap, __driver_announce, a.",
    )
    with pytest.raises(ThinkError) as unforced:
        await ops.reset(OWNER, args(tools.Reset, workflow="three", run_id="r"))
    assert unforced.value.error_code == "RESET_NOT_ALLOWED"
    assert await ops.reset(OWNER, args(tools.Reset, workflow="three", run_id="r", force=True)) == {
        "ok": True,
        "cleared": "r",
    }
    assert (await ops.state_list(OWNER, args(tools.Runs, workflow="three")))["runs"] == []


async def test_the_state_of_a_run_and_the_owners_runs(tmp_path: Path) -> None:
    ops = await ops_at_c(tmp_path)
    got = await ops.state_get(OWNER, args(tools.RunOf, workflow="three", run_id="r"))
    assert got["progress"] == {"done": 4, "total": 5}
    assert got["state"]["checkpoints"] == ["__driver_bootstrap", "__driver_announce", "a", "b"]
    assert got["state"]["captures"]["b_out"]["content"] == {"text": "ab"}
    [run] = (await ops.state_list(OWNER, args(tools.Runs, workflow="three")))["runs"]
    assert (run["run_id"], run["status"]) == ("r", "active")
    assert (await ops.state_list("someone-else", args(tools.Runs, workflow="three")))["runs"] == []


async def test_validate_reports_every_problem_of_a_workflow_and_needs_something_to_check(tmp_path: Path) -> None:
    ops = await ops_at_c(tmp_path)
    assert await ops.validate(OWNER, args(tools.Validate, workflow="three")) == {"valid": True, "errors": []}
    broken = await ops.validate(OWNER, args(tools.Validate, workflow="broken"))
    assert broken["valid"] is False and [e["error"] for e in broken["errors"]] == ["UNKNOWN_STEP"]
    with pytest.raises(ThinkError) as nothing:
        await ops.validate(OWNER, args(tools.Validate))
    assert nothing.value.error_code == "INVALID_PARAMS"


async def test_debug_gives_the_history_and_what_changed_since_a_checkpoint(tmp_path: Path) -> None:
    ops = await ops_at_c(tmp_path)
    body = await ops.debug(OWNER, args(tools.Debug, workflow="three", run_id="r", action="diff", from_step="a"))
    assert body["checkpoints"] == ["__driver_bootstrap", "__driver_announce", "a", "b"]
    assert body["diff"] == {"b": {"from": "pending", "to": "done"}}
    assert [h["event"] for h in body["history"]][:1] == ["plan"]
    with pytest.raises(ThinkError) as no_base:
        await ops.debug(OWNER, args(tools.Debug, workflow="three", run_id="r", action="diff"))
    assert no_base.value.error_code == "INVALID_PARAMS"
