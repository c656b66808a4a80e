"""Seed 001's task-level context control: `context` as a mapping (include_tasks, exclude_tasks, mode,
min_relevance, max_bytes) beside the list form, and `inject_context: false`, with the seed's own example."""

from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.think.workflow import Context, parse
from tests.think.harness import body_of, failure, gateway_on, past_driver

pytestmark = pytest.mark.anyio

SEED = """\
name: seed_context_v1
version: "1.0.0"
steps:
  - {id: task1, call: local.fetch, input_template: {}, capture_as: data}
  - {id: noisy_task, call: local.fetch, input_template: {}, capture_as: noise}
  - id: task2
    call: local.process
    deps: [task1, noisy_task]
    input_template: {}
    capture_as: processed
    context:
      include_tasks: [task1]
      exclude_tasks: [noisy_task]
      mode: automatic
      min_relevance: 0.5
      max_bytes: 50000
  - id: task3
    call: local.report
    deps: [task2]
    input_template: {}
    inject_context: false
  - id: task4
    call: local.report
    deps: [task3]
    input_template: {}
    context: {include_tasks: [noisy_task]}
  - id: task5
    call: local.report
    deps: [task4]
    input_template: {}
    context: {max_bytes: 0}
"""


async def contexts(client: Any) -> dict[str, list[str]]:
    """Each step's instruction context (capture names, `~name` when only a stub fit), running the seed's flow."""
    ins = await past_driver(client, body_of(await client.call_tool("think.plan", {"workflow": "seed_context_v1"})))
    seen: dict[str, list[str]] = {}
    while not ins["done"]:
        seen[ins["step_id"]] = [("~" if e.get("omitted") else "") + e["capture"] for e in ins["context"]]
        ref = {"workflow": "seed_context_v1", "run_id": ins["run_id"], "step_id": ins["step_id"]}
        ins = body_of(await client.call_tool("think.next", {**ref, "result_snapshot": {"from": ins["step_id"]}}))
    return seen


async def test_the_seeds_task_level_context_control_decides_each_instructions_context(tmp_path: Path) -> None:
    async with gateway_on(tmp_path, {"seed_context_v1": SEED}) as client:
        report = body_of(await client.call_tool("think.validate", {"workflow": "seed_context_v1"}))
        seen = await contexts(client)
    assert report == {"valid": True, "errors": []}
    assert seen == {
        "task1": [],
        "noisy_task": ["data"],  # automatic: the recent capture (0.3)
        "task2": ["data"],  # include first; noise excluded although a direct dependency
        "task3": [],  # inject_context: false
        "task4": ["noise"],  # include_tasks without a mode: only these (manual)
        "task5": [],  # a budget of 0 bytes holds nothing
    }


def test_the_list_form_and_the_mapping_form_parse_to_one_rule() -> None:
    def context_of(step: dict[str, Any]) -> Context:
        data = {"name": "c_v1", "version": "1", "steps": [{"id": "a", "call": "local.x", **step}]}
        return parse(data, "c_v1.yaml").steps[0].context

    assert context_of({}) == Context()
    assert context_of({"context": ["a", "b"]}) == Context(mode="automatic", include=("a", "b"))
    assert context_of({"context": {"mode": "none"}}) == Context(mode="none")
    assert context_of({"inject_context": False, "context": ["a"]}).mode == "none"
    parsed = yaml.safe_load(SEED)
    assert parse(parsed, "s.yaml").steps[2].context == Context(
        mode="automatic", include=("task1",), exclude=("noisy_task",), min_relevance=0.5, max_bytes=50_000
    )


async def test_an_unknown_context_key_or_name_is_refused_at_plan(tmp_path: Path) -> None:
    bad = SEED.replace("min_relevance: 0.5", "relevance: 0.5").replace("seed_context_v1", "bad_context_v1")
    typo = SEED.replace("exclude_tasks: [noisy_task]", "exclude_tasks: [noisy]").replace("seed_context_v1", "typo_v1")
    async with gateway_on(tmp_path, {"bad_context_v1": bad, "typo_v1": typo}) as client:
        body = failure(await client.call_tool("think.plan", {"workflow": "bad_context_v1"}), "YAML_SCHEMA_VIOLATION")
        named = failure(await client.call_tool("think.plan", {"workflow": "typo_v1"}), "UNRESOLVED_VAR")
        report = body_of(await client.call_tool("think.validate", {"workflow": "typo_v1"}))
    (problem,) = body["diagnostics"]
    assert problem["path"] == "steps[2].context"
    (problem,) = named["diagnostics"]
    assert problem["path"] == "steps[2].context" and "context names 'noisy'" in problem["message"]
    assert report["valid"] is False and report["errors"] == named["diagnostics"]


FANOUT = """\
name: fanout_v1
version: "1"
steps:
  - {id: topic, call: local.fetch, input_template: {}, capture_as: subject}
  - id: each
    call: local.work
    deps: [topic]
    foreach: "{{ params.items }}"
    input_template: {n: "{{ item }}"}
    capture_as: part
  - id: join
    call: local.work
    deps: [each]
    input_template: {about: "{{ subject }}"}
"""


async def test_a_foreach_item_gets_none_of_its_siblings_outputs_as_context(tmp_path: Path) -> None:
    """Seed 001's "recent step" rule gave each item the last three siblings' outputs (~61 KB over 20 KB ones,
    ~15k tokens per think.next); no item reads another's, so they carry only what the step reads."""
    async with gateway_on(tmp_path, {"fanout_v1": FANOUT}) as client:
        plan = {"workflow": "fanout_v1", "params": {"items": list(range(6))}}
        ins = await past_driver(client, body_of(await client.call_tool("think.plan", plan)))
        contexts: dict[str, list[dict[str, Any]]] = {}
        while not ins["done"]:
            contexts[ins["step_id"]] = ins["context"]
            ref = {"workflow": "fanout_v1", "run_id": ins["run_id"], "step_id": ins["step_id"]}
            snap = {"t": 1} if ins["step_id"] == "topic" else {"out": "x" * 20_000}
            ins = body_of(await client.call_tool("think.next", {**ref, "result_snapshot": snap}))
    for i in range(6):
        assert [c["capture"] for c in contexts[f"each[{i}]"]] == ["subject"]  # its dependency, no sibling
    assert contexts["join"][0]["capture"] == "subject"  # what its template reads comes first
