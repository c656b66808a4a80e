"""Seed 003's answer names beside ours: a script written against the seed (`plan.instruction.call` with
`plan.instruction.input_template`, `state.vars`, `{ok, state}` from think.reset) runs on the same answers."""

from pathlib import Path

import pytest

from tests.think.harness import body_of, gateway_on, past_driver

pytestmark = pytest.mark.anyio

REVIEW = """\
name: review_v1
version: "1.0"
steps:
  - {id: lint, call: k.echo, input_template: {text: "rubocop offenses in {{ path }}"}, capture_as: lint_result}
  - {id: tests, call: k.echo, deps: [lint], input_template: {text: "{{ lint_result.text }}"}}
"""


async def test_a_script_written_to_seed_003s_answers_runs_the_workflow(tmp_path: Path) -> None:
    async with gateway_on(tmp_path, {"review_v1": REVIEW}) as client:
        plan = await past_driver(
            client, body_of(await client.call_tool("think.plan", {"workflow": "review_v1", "params": {"path": "a"}}))
        )
        # the seed's client loop: call plan.instruction.call with plan.instruction.input_template, then next
        result = await client.call_tool(plan["instruction"]["call"], plan["instruction"]["input_template"])
        assert not result.is_error
        ref = {"workflow": "review_v1", "run_id": plan["state"]["run_id"], "step_id": plan["instruction"]["step_id"]}
        second = body_of(await client.call_tool("think.next", ref))
        run = {"workflow": "review_v1", "run_id": ref["run_id"]}
        reset = body_of(await client.call_tool("think.reset", {**run, "checkpoint": "lint"}))
        got = body_of(await client.call_tool("think.state.get", run))
    assert plan["instruction"] == {"step_id": "lint", "call": "k.echo", "input_template": plan["input"]}
    assert plan["state"] == {"vars": {}, "version": "1.0", "run_id": plan["run_id"]}
    assert second["instruction"]["input_template"] == {"text": "rubocop offenses in a"}
    assert second["state"]["vars"] == {
        "lint_result": {"step_id": "lint", "bytes": 32}
    }  # {"text": "rubocop offenses in a"}
    assert reset["ok"] is True and reset["state"]["vars"].keys() == {"lint_result"}
    assert got["state"]["vars"].keys() == {"lint_result"}


async def test_a_listing_script_of_either_seed_runs_on_think_workflows_list(tmp_path: Path) -> None:
    review = REVIEW.replace('version: "1.0"\n', 'version: "1.0"\ndescription: "PR review flow"\ntags: [review]\n')
    async with gateway_on(tmp_path, {"review_v1": review}) as client:
        # seed 003's call knows only `filter`, and reads {id, version, desc}
        seed_003 = body_of(await client.call_tool("think.workflows.list", {"filter": "review"}))
        # the listing seed's calls name a mode, and compact has exactly its fields
        compact = body_of(await client.call_tool("think.workflows.list", {"mode": "compact", "tags": ["review"]}))
        detailed = body_of(await client.call_tool("think.workflows.list", {"mode": "detailed"}))
    listed = seed_003["workflows"][0]
    assert (listed["id"], listed["version"], listed["desc"]) == ("review_v1", "1.0", "PR review flow")
    assert listed["name"] == "review_v1" and listed["input_summary"]  # compact's fields are there too
    assert set(compact["workflows"][0]) == {"name", "description", "tags", "input_summary"}
    assert set(detailed["workflows"][0]) == {"name", "description", "tags", "version", "author", "inputs", "outputs"}
