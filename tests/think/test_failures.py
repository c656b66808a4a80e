"""Steps that fail have somewhere to go: a real downstream (tests/servers/flaky.py) fails a step's call the first K
times, the gateway sees it fail, and the run retries, falls back, cleans up, goes on or stops as the workflow says."""

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.harness import PYTHON, ROOT, hints_of, text_of
from tests.think.harness import body_of, failure, gateway_on, past_driver

pytestmark = pytest.mark.anyio

FLAKY = str(ROOT / "tests" / "servers" / "flaky.py")

RETRY = """\
name: retry_v1
version: "1"
steps:
  - id: fetch
    call: f.fetch
    input_template: {key: a, fail_first: 1}
    retry: {attempts: 3, backoff: 0}
    capture_as: got
  - {id: use, call: f.echo, input_template: {text: "{{ got.key }} on call {{ got.calls }}"}}
"""

FALLBACK = """\
name: fallback_v1
version: "1"
steps:
  - id: fetch
    call: f.fetch
    input_template: {key: b, fail_first: 9, how: server_error}
    retry: {attempts: 2, backoff: {initial: 0, factor: 2}}
    capture_as: got
  - {id: use, call: f.echo, input_template: {text: "{{ got.key }}"}}
  - {id: fallback, call: f.echo, deps: [fetch], when: "failed(fetch)", input_template: {text: "fetch failed"}}
  - {id: cleanup, call: f.echo, deps: [use, fallback], when: "always()", input_template: {text: "cleanup"}}
"""

GO_ON = """\
name: go_on_v1
version: "1"
steps:
  - {id: fetch, call: f.fetch, input_template: {key: c, fail_first: 9}, capture_as: got, continue_on_error: true}
  - {id: use, call: f.echo, input_template: {text: "{{ got.key }}"}}
  - {id: other, call: f.echo, input_template: {text: "independent"}}
  - {id: after, call: f.echo, deps: [use], input_template: {text: "after"}}
"""

LATER = """\
name: later_v1
version: "1"
steps:
  - id: fetch
    call: f.fetch
    input_template: {key: d, fail_first: 1}
    retry: {attempts: 2, backoff: {initial: 600, factor: 2, max: 900}}
"""

EACH = """\
name: each_v1
version: "1"
steps:
  - id: fetch
    call: f.fetch
    foreach: "{{ params.keys }}"
    input_template: {key: "{{ item }}", fail_first: "{{ 9 if item == 'bad' else 0 }}"}
    continue_on_error: true
    capture_as: got
  - {id: report, call: f.echo, deps: [fetch], when: "failed(fetch)", input_template: {text: "an item failed"}}
  - {id: use, call: f.echo, input_template: {text: "{{ got | length }}"}}
"""

SIDE_BY_SIDE = """\
name: side_v1
version: "1"
steps:
  - {id: left, call: f.fetch, input_template: {key: l, fail_first: 9}, continue_on_error: true}
  - {id: right, call: f.echo, input_template: {text: r}}
"""

TIMEOUT = """\
name: timeout_v1
version: "1"
steps:
  - {id: fetch, call: f.fetch, input_template: {key: e, fail_first: 1, how: hang}, retry: {attempts: 2}}
"""


def flaky(**fields: Any) -> dict[str, Any]:
    return {"f": {"transport": "stdio", "command": PYTHON, "args": [FLAKY], **fields}}


async def drive(client: Client, ins: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """Follow each instruction through the gateway, never sending a result_snapshot; returns the done answer and
    each call made: (step id, the gateway's hint on it)."""
    made: list[tuple[str, str]] = []
    while not ins["done"]:
        result = await client.call_tool(ins["call"], ins["input"])
        made.append((ins["step_id"], next(h for h in hints_of(result) if f"`{ins['step_id']}`" in h or "Step " in h)))
        ref = {"workflow": ins["workflow"], "run_id": ins["run_id"], "step_id": ins["step_id"]}
        ins = body_of(await client.call_tool("think.next", ref))
    return ins, made


async def started(client: Client, workflow: str) -> dict[str, Any]:
    return await past_driver(client, body_of(await client.call_tool("think.plan", {"workflow": workflow})))


async def test_a_step_that_fails_once_is_reissued_and_succeeds_on_attempt_2(tmp_path: Path) -> None:
    async with gateway_on(tmp_path, {"retry_v1": RETRY}, flaky()) as client:
        first = await started(client, "retry_v1")
        failed = await client.call_tool(first["call"], first["input"])
        ref = {"workflow": "retry_v1", "run_id": first["run_id"], "step_id": "fetch"}
        again = body_of(await client.call_tool("think.next", ref))
        done, made = await drive(client, again)
    assert failed.is_error and "a is unavailable (call 1 of a)" in text_of(failed)
    hint = next(h for h in hints_of(failed) if "Step fetch failed" in h)
    assert "attempt 1 of 3: tool error: a is unavailable (call 1 of a)" in hint and "Retry not before" in hint
    assert again["step_id"] == "fetch" and again["input"] == first["input"]
    assert again["retry"]["attempt"] == 2 and again["retry"]["of"] == 3 and again["retry"]["wait_s"] == 0
    assert "attempt 2 of 3" in again["next"]
    assert [step for step, _ in made] == ["fetch", "use"]
    assert done["status"] == "done" and "failed" not in done
    assert "recorded by the gateway" in made[0][1]


async def test_retries_used_up_run_the_fallback_and_the_cleanup_and_the_run_ends_failed(tmp_path: Path) -> None:
    async with gateway_on(tmp_path, {"fallback_v1": FALLBACK}, flaky()) as client:
        done, made = await drive(client, await started(client, "fallback_v1"))
        ref = {"workflow": "fallback_v1", "run_id": done["run_id"]}
        state = body_of(await client.call_tool("think.state.get", ref))["state"]
        replay = body_of(await client.call_tool("think.debug", {**ref, "action": "replay"}))
        explained = body_of(await client.call_tool("think.explain", {"workflow": "fallback_v1", "step_id": "fetch"}))
    assert [step for step, _ in made] == ["fetch", "fetch", "fallback", "cleanup"]
    assert "failed after 2 attempts" in made[1][1] and "server error: " in made[1][1]
    assert "only steps that test failed(fetch) or always() still run" in made[1][1]
    assert done["status"] == "failed" and done["done"] is True
    assert [(f["step_id"], f["attempts"]) for f in done["failed"]] == [("fetch", 2)]
    assert "b is unavailable (call 2 of b)" in done["failed"][0]["error"]
    assert "failed at step fetch" in done["next"] and "think.reset" in done["next"]
    steps = state["steps"]
    assert steps["use"]["status"] == "skipped" and steps["use"]["reason"] == "step fetch failed"
    assert (steps["fallback"]["status"], steps["cleanup"]["status"]) == ("done", "done")
    assert replay["identical"] is True, replay
    assert explained["retry"] == {"attempts": 2, "initial": 0.0, "factor": 2.0, "max": 300.0}


async def test_continue_on_error_goes_on_past_the_failure_and_skips_only_what_needs_it(tmp_path: Path) -> None:
    stopping = GO_ON.replace("go_on_v1", "stop_v1").replace(", continue_on_error: true", "")
    async with gateway_on(tmp_path, {"go_on_v1": GO_ON, "stop_v1": stopping}, flaky()) as client:
        went_on, made = await drive(client, await started(client, "go_on_v1"))
        ref = {"workflow": "go_on_v1", "run_id": went_on["run_id"]}
        gone = body_of(await client.call_tool("think.state.get", ref))["state"]["steps"]
        stopped, made_stopping = await drive(client, await started(client, "stop_v1"))
        ref = {"workflow": "stop_v1", "run_id": stopped["run_id"]}
        halted = body_of(await client.call_tool("think.state.get", ref))["state"]["steps"]
        # the answer's advice works: rolled back to before the failure, the step is made afresh
        rolled = body_of(await client.call_tool("think.reset", {**ref, "checkpoint": "__driver_announce"}))
    assert [step for step, _ in made] == ["fetch", "other"]
    assert "The run goes on (continue_on_error)" in made[0][1]
    assert went_on["status"] == "done" and [f["step_id"] for f in went_on["failed"]] == ["fetch"]
    assert (gone["use"]["reason"], gone["after"]["reason"]) == ("step fetch failed", "step fetch failed")
    assert gone["other"]["status"] == "done"
    # without it, the run stops at the failure: the independent step is skipped too
    assert [step for step, _ in made_stopping] == ["fetch"]
    assert stopped["status"] == "failed" and halted["other"]["reason"] == "the run stopped: step fetch failed"
    again = rolled["instruction"]
    assert again["step_id"] == "fetch" and "retry" not in again and again["progress"]["done"] == 2


async def test_a_retry_is_refused_before_its_time_and_an_early_call_is_not_recorded(tmp_path: Path) -> None:
    async with gateway_on(tmp_path, {"later_v1": LATER}, flaky()) as client:
        first = await started(client, "later_v1")
        await client.call_tool(first["call"], first["input"])  # fails: attempt 1 of 2
        ref = {"workflow": "later_v1", "run_id": first["run_id"], "step_id": "fetch"}
        again = body_of(await client.call_tool("think.next", ref))
        reported = failure(
            await client.call_tool("think.next", {**ref, "result_snapshot": {"key": "d"}}), "RETRY_NOT_BEFORE"
        )
        early = await client.call_tool(first["call"], first["input"])  # the server answers; too early to count
        still = body_of(await client.call_tool("think.next", ref))
    assert 599 <= again["retry"]["wait_s"] <= 600 and again["retry"]["not_before"].endswith("Z")
    assert f"Retry not before {again['retry']['not_before']}" in again["next"]
    assert "retry not before" in reported["details"] and "(attempt 1 of 2" in reported["details"]
    assert not early.is_error
    assert any("made before its retry time and is not recorded" in h for h in hints_of(early))
    assert still["step_id"] == "fetch" and still["retry"]["attempt"] == 2 and not still["done"]


async def test_a_timeout_is_a_failed_attempt(tmp_path: Path) -> None:
    async with gateway_on(tmp_path, {"timeout_v1": TIMEOUT}, flaky(timeout_s=0.5)) as client:
        done, made = await drive(client, await started(client, "timeout_v1"))
    assert [step for step, _ in made] == ["fetch", "fetch"]
    assert "timeout: " in made[0][1] and "attempt 1 of 2" in made[0][1]
    assert done["status"] == "done"


async def test_a_failed_foreach_item_fails_its_step_and_the_other_items_still_run(tmp_path: Path) -> None:
    async with gateway_on(tmp_path, {"each_v1": EACH}, flaky()) as client:
        plan = {"workflow": "each_v1", "params": {"keys": ["good", "bad", "fine"]}}
        done, made = await drive(client, await past_driver(client, body_of(await client.call_tool("think.plan", plan))))
        ref = {"workflow": "each_v1", "run_id": done["run_id"]}
        steps = body_of(await client.call_tool("think.state.get", ref))["state"]["steps"]
    assert [step for step, _ in made] == ["fetch[0]", "fetch[1]", "fetch[2]", "report"]
    assert done["status"] == "done" and [f["step_id"] for f in done["failed"]] == ["fetch[1]"]
    assert steps["use"]["reason"] == "step fetch failed"


async def test_a_step_handed_out_beside_one_that_failed_is_reported_with_the_hash_it_was_handed_out_with(
    tmp_path: Path,
) -> None:
    async with gateway_on(tmp_path, {"side_v1": SIDE_BY_SIDE}, flaky()) as client:
        left = await started(client, "side_v1")
        await client.call_tool(left["call"], left["input"])  # fails; the run goes on
        await client.call_tool("f.echo", {"text": "r"})  # the other ready step, observed
        ref = {"workflow": "side_v1", "run_id": left["run_id"], "step_id": "right"}
        done = body_of(await client.call_tool("think.next", {**ref, "state_hash": left["state_hash"]}))
    assert done["done"] is True and done["status"] == "done" and done["failed"][0]["step_id"] == "left"
