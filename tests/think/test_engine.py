"""The Think engine in process (`Engine`, a real local state folder): plan starts a run with the driver first and is
idempotent for a run id, a run is its owner's alone, params are checked before anything is stored, and a run is
followed to its summary."""

from pathlib import Path

import pytest

from gateway.think.engine import EXISTING
from gateway.think.errors import ThinkError
from tests.think.engines import OWNER, engine_on, planned

pytestmark = pytest.mark.anyio

TWO = """
name: two
version: "1"
inputs:
  who: {type: string}
steps:
  - id: greet
    call: k.echo
    input_template: {text: "hello {{ params.who }}"}
    capture_as: greeting
  - id: shout
    call: k.echo
    input_template: {text: "{{ greeting.text | upper }}"}
    capture_as: shouted
"""


async def test_a_plan_begins_with_the_driver_and_is_idempotent_for_its_run_id(tmp_path: Path) -> None:
    engine = engine_on(tmp_path, {"two": TWO})
    first = await engine.plan(OWNER, "two", {"who": "ann"}, "r")
    assert (first["step_id"], first["call"]) == ("__driver_bootstrap", "think.driver_prompt")
    again = await engine.plan(OWNER, "two", {"who": "someone else"}, "r")
    assert again["note"] == EXISTING
    assert {k: v for k, v in again.items() if k != "note"} == first


async def test_a_run_is_followed_to_its_summary_each_step_reading_the_last(tmp_path: Path) -> None:
    engine = engine_on(tmp_path, {"two": TWO})
    ins = await planned(engine, "two", {"who": "ann"})
    assert (ins["step_id"], ins["input"]) == ("greet", {"text": "hello ann"})
    ins = await engine.next(OWNER, "two", "r", "greet", {"text": "hello ann"})
    assert (ins["step_id"], ins["input"]) == ("shout", {"text": "HELLO ANN"})
    assert (await engine.run_of(OWNER, "two", None)).run_id == "r"  # the latest active run, when none is named
    done = await engine.next(OWNER, "two", "r", "shout", {"text": "HELLO ANN"})
    assert done["done"] is True
    assert done["summary"] == "Workflow two finished: 4 steps done, 0 skipped."
    assert done["artifacts"] == ["greeting", "shouted"]
    with pytest.raises(ThinkError, match="no active run of 'two'"):  # a done run is nobody's latest active one
        await engine.run_of(OWNER, "two", None)


async def test_a_run_is_its_owners_alone(tmp_path: Path) -> None:
    engine = engine_on(tmp_path, {"two": TWO})
    await planned(engine, "two", {"who": "ann"})
    with pytest.raises(ThinkError) as other:
        await engine.next("someone-else", "two", "r", "greet", {"text": "x"})
    assert other.value.error_code == "UNKNOWN_RUN"


async def test_params_are_checked_before_a_run_exists(tmp_path: Path) -> None:
    engine = engine_on(tmp_path, {"two": TWO})
    with pytest.raises(ThinkError) as bad:
        await engine.plan(OWNER, "two", {"who": 5}, "r")
    assert bad.value.error_code == "INVALID_PARAMS"
    assert not await engine.store.exists(OWNER, "two", "r")
    with pytest.raises(ThinkError) as unknown:
        await engine.plan(OWNER, "nope", {}, "r")
    assert unknown.value.error_code == "UNKNOWN_WORKFLOW"
