"""think.next {parallel: true} hands out every ready step of a DAG at once; each is made through the gateway
(observed from a real downstream) and reported on its own, with the state_hash it was handed out with. The
default stays one instruction."""

from pathlib import Path
from typing import Any

import pytest

from tests.harness import hints_of
from tests.think.harness import body_of, failure, gateway_on

pytestmark = pytest.mark.anyio

FAN = """\
name: fan_v1
version: "1"
steps:
  - {id: left, call: k.echo, input_template: {text: "left"}, capture_as: l}
  - {id: right, call: k.echo, input_template: {text: "right"}, capture_as: r}
  - {id: third, call: k.echo, input_template: {text: "third"}}
  - {id: join, call: k.echo, deps: [left, right], input_template: {text: "{{ l.text }}+{{ r.text }}"}}
"""


async def through_driver(client: Any, ins: dict[str, Any], parallel: bool) -> dict[str, Any]:
    while ins["step_id"].startswith("__driver_"):
        await client.call_tool(ins["call"], ins["input"])
        ref = {"workflow": "fan_v1", "run_id": ins["run_id"], "step_id": ins["step_id"], "parallel": parallel}
        ins = body_of(await client.call_tool("think.next", ref))
    return ins


async def test_parallel_hands_out_every_ready_step_and_each_is_reported_on_its_own(tmp_path: Path) -> None:
    async with gateway_on(tmp_path, {"fan_v1": FAN}) as client:
        plan = body_of(await client.call_tool("think.plan", {"workflow": "fan_v1"}))
        ins = await through_driver(client, plan, parallel=True)
        handed = ins["instructions"]
        for each in handed:  # all at once through the gateway, which records each against its step
            result = await client.call_tool(each["call"], each["input"])
            assert any(f"Step `{each['step_id']}`" in h for h in hints_of(result)), hints_of(result)
        answers = []
        for each in reversed(handed):  # reported in any order, each with the hash it was handed out with
            ref = {"workflow": "fan_v1", "run_id": each["run_id"], "step_id": each["step_id"]}
            answers.append(body_of(await client.call_tool("think.next", {**ref, "state_hash": each["state_hash"]})))
        # a step that depends on one done since is answered from a stale instruction: refused
        join = answers[-1]
        stale = {
            "workflow": "fan_v1",
            "run_id": join["run_id"],
            "step_id": "join",
            "state_hash": handed[0]["state_hash"],
        }
        refused = failure(
            await client.call_tool("think.next", {**stale, "result_snapshot": {"text": "x"}}), "STATE_CONFLICT"
        )
    assert [i["step_id"] for i in handed] == ["left", "right", "third"]
    assert handed[0]["state_hash"] == handed[1]["state_hash"] == handed[2]["state_hash"]
    assert [a.get("observation") for a in answers] == [{"used": "observed"}] * 3
    assert join["step_id"] == "join" and join["input"] == {"text": "left+right"} and "instructions" not in join
    assert "is stale" in refused["details"]


async def test_without_parallel_one_instruction_is_answered(tmp_path: Path) -> None:
    async with gateway_on(tmp_path, {"fan_v1": FAN}) as client:
        plan = body_of(await client.call_tool("think.plan", {"workflow": "fan_v1"}))
        ins = await through_driver(client, plan, parallel=False)
    assert ins["step_id"] == "left" and "instructions" not in ins
