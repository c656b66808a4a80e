"""The run state machine (`think/runner.py`), driven through an in-process engine: a false `when` skips its step
(with the reason kept), a `foreach` expands into one step per item each seeing `item` and `loop`, the items' captures
reach later templates as a list, progress counts real steps, and the state hash moves only with progress."""

from pathlib import Path

import pytest

from gateway.think import runner, statehash
from gateway.think.errors import ThinkError
from tests.think.engines import OWNER, engine_on, planned

pytestmark = pytest.mark.anyio

LOOP = """
name: loop
version: "1"
inputs:
  names: {type: array}
  shout: {type: boolean}
steps:
  - id: each
    call: k.echo
    foreach: "{{ params.names }}"
    input_template: {text: "{{ loop.index }}/{{ loop.length }} {{ item }}"}
    capture_as: said
  - id: loud
    call: k.echo
    when: "{{ params.shout }}"
    input_template: {text: "LOUD"}
  - id: all
    call: k.echo
    deps: [loud]
    input_template: {text: "{{ said | map(attribute='text') | join(', ') }}"}
"""
BAD = """
name: bad
version: "1"
inputs:
  names: {type: string}
steps:
  - {id: each, call: k.echo, foreach: "{{ params.names }}", input_template: {text: "{{ item }}"}}
"""


async def test_a_foreach_expands_per_item_a_false_when_skips_and_the_items_reach_later_steps(tmp_path: Path) -> None:
    engine = engine_on(tmp_path, {"loop": LOOP})
    ins = await planned(engine, "loop", {"names": ["ann", "bo"], "shout": False})
    state = await engine.run_of(OWNER, "loop", "r")
    assert state.steps["each"].status == "expanded"
    assert (state.steps["loud"].status, state.steps["loud"].reason) == (
        "skipped",
        "when '{{ params.shout }}' was false",
    )
    assert runner.ready(state) == ["each[0]", "each[1]"]
    assert (ins["step_id"], ins["input"], ins["capture_as"]) == ("each[0]", {"text": "1/2 ann"}, "said[0]")
    assert runner.progress(state) == {"done": 3, "total": 6}  # the driver's two and the skipped step
    before = statehash.state_hash(state)
    await engine.next(OWNER, "loop", "r", "each[1]", {"text": "2/2 bo"})  # items in any order
    last = await engine.next(OWNER, "loop", "r", "each[0]", {"text": "1/2 ann"})
    assert (last["step_id"], last["input"]) == ("all", {"text": "1/2 ann, 2/2 bo"})
    assert last["state_hash"] != before


async def test_the_state_hash_ignores_what_changes_without_progress(tmp_path: Path) -> None:
    engine = engine_on(tmp_path, {"loop": LOOP})
    await planned(engine, "loop", {"names": ["ann"], "shout": True})
    state = await engine.run_of(OWNER, "loop", "r")
    hashed = statehash.state_hash(state)
    state.steps["each[0]"].input = {"text": "rendered again"}
    state.params["names"] = ["someone"]
    assert statehash.state_hash(state) == hashed
    state.steps["each[0]"].status = "done"
    assert statehash.state_hash(state) != hashed


async def test_a_foreach_over_something_not_a_list_says_what_it_got(tmp_path: Path) -> None:
    engine = engine_on(tmp_path, {"bad": BAD})
    with pytest.raises(ThinkError) as failed:
        await planned(engine, "bad", {"names": "ann"})
    assert failed.value.error_code == "TEMPLATE_RENDER_ERROR"
    assert "is str, not a list" in str(failed.value.details)
