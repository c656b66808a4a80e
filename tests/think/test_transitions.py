"""What a step's result does to a loaded run (`Transitions`), through an in-process engine: a repeated result is
ignored, a different one refused unless forced, a step not ready or unknown or a stale state hash refused with what
is ready now, a result failing its success schema refused, a missing one asked for; and the done answer renders the
workflow's `outputs`."""

import json
from pathlib import Path

import pytest

from gateway.think.errors import ThinkError
from tests.think.engines import OWNER, engine_on, planned

pytestmark = pytest.mark.anyio

FLOW = """
name: flow
version: "1"
steps:
  - id: count
    call: k.measure
    input_template: {text: "abc"}
    capture_as: counted
    success_schema: counted
  - id: report
    call: k.echo
    input_template: {text: "{{ counted.len }}"}
outputs:
  length: "{{ counted.len }}"
"""
COUNTED = {"type": "object", "required": ["len"], "properties": {"len": {"type": "integer"}}}


async def refused(call: object) -> ThinkError:
    with pytest.raises(ThinkError) as failed:
        await call  # type: ignore[misc]
    return failed.value


@pytest.fixture
def schemas(tmp_path: Path) -> Path:
    folder = tmp_path / "schemas"
    folder.mkdir()
    (folder / "counted.json").write_text(json.dumps(COUNTED))
    return folder


async def test_a_repeated_result_is_ignored_a_different_one_refused_unless_forced(
    tmp_path: Path, schemas: Path
) -> None:
    engine = engine_on(tmp_path, {"flow": FLOW}, schemas)
    await planned(engine, "flow")
    await engine.next(OWNER, "flow", "r", "count", {"len": 3})
    again = await engine.next(OWNER, "flow", "r", "count", {"len": 3})
    assert again["note"] == "step count was already recorded (duplicate ignored)"
    other = await refused(engine.next(OWNER, "flow", "r", "count", {"len": 4}))
    assert other.error_code == "STEP_ALREADY_COMPLETED"
    forced = await engine.next(OWNER, "flow", "r", "count", {"len": 4}, force=True)
    assert forced["step_id"] == "report"
    state = await engine.run_of(OWNER, "flow", "r")
    assert state.captures["counted"]["content"] == {"len": 4}


async def test_a_step_not_ready_an_unknown_one_and_a_stale_hash_are_refused_naming_what_is_ready(
    tmp_path: Path, schemas: Path
) -> None:
    engine = engine_on(tmp_path, {"flow": FLOW}, schemas)
    ins = await planned(engine, "flow")
    early = await refused(engine.next(OWNER, "flow", "r", "report", {"text": "3"}))
    assert (early.error_code, early.details, early.guidance) == (
        "STEP_NOT_READY",
        "step 'report' waits for ['count']",
        "Ready now: count; follow the last instruction.",
    )
    unknown = await refused(engine.next(OWNER, "flow", "r", "nope", {}))
    assert (unknown.error_code, unknown.guidance) == ("UNKNOWN_STEP", "Ready now: count.")
    await engine.next(OWNER, "flow", "r", "count", {"len": 3}, state_hash=ins["state_hash"])
    stale = await refused(engine.next(OWNER, "flow", "r", "report", {"text": "3"}, state_hash=ins["state_hash"]))
    assert stale.error_code == "STATE_CONFLICT" and "is stale" in str(stale.details)


async def test_a_result_against_its_schema_or_missing_is_refused_and_the_run_stays(
    tmp_path: Path, schemas: Path
) -> None:
    engine = engine_on(tmp_path, {"flow": FLOW}, schemas)
    await planned(engine, "flow")
    assert (await refused(engine.next(OWNER, "flow", "r", "count", {"len": "three"}))).error_code == "VALIDATION_FAILED"
    missing = await refused(engine.next(OWNER, "flow", "r", "count"))
    assert missing.error_code == "INVALID_PARAMS" and "result_snapshot is missing" in str(missing.details)
    state = await engine.run_of(OWNER, "flow", "r")
    assert state.steps["count"].status == "pending"


async def test_the_done_answer_renders_the_workflows_outputs(tmp_path: Path, schemas: Path) -> None:
    engine = engine_on(tmp_path, {"flow": FLOW}, schemas)
    await planned(engine, "flow")
    await engine.next(OWNER, "flow", "r", "count", {"len": 3})
    done = await engine.next(OWNER, "flow", "r", "report", {"text": "3"})
    assert (done["done"], done["artifacts"], done["progress"]) == (True, {"length": 3}, {"done": 4, "total": 4})
