"""Seed 003's answer field names, answered beside this engine's so a script written against the seed runs.

The seed answers `{instruction: {step_id, call, input_template}, state: {vars, version, run_id}, done}` where
this engine answers the instruction's fields at the top level and the rendered arguments as `input`. One answer
carries both: the seed's `instruction` (its `input_template` is the rendered `input`, which is what the seed's
client loop calls with: `call plan.instruction.call with plan.instruction.input_template`) and its `state`.
`state.vars` names the run's captures (step and size), not their values: the values an instruction needs are
in its `context`, and think.state.get has the rest; copying them here would double every answer.
"""

from typing import Any

from gateway.think.state import RunState


def seed_state(state: RunState, workflow_version: str) -> dict[str, Any]:
    """The seed's `state`: `{vars, version, run_id}`."""
    vars_ = {
        key: {"step_id": rec.get("step_id"), "bytes": rec.get("original_size")}
        for key, rec in state.captures.items()
        if not key.startswith("__")
    }
    return {"vars": vars_, "version": workflow_version, "run_id": state.run_id}


def with_seed_names(body: dict[str, Any], state: RunState) -> dict[str, Any]:
    """`body` (an instruction) with the seed's `instruction` and `state` beside its own fields."""
    body["instruction"] = {"step_id": body["step_id"], "call": body["call"], "input_template": body["input"]}
    body["state"] = seed_state(state, body["workflow_version"])
    return body
