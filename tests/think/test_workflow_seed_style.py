"""Workflows as the seeds write them, and the clients the seeds assume.

The seeds' syntax (`foreach: "{{ params.pr_ids }}"`, `when: "{{ params.shout }}"`, no `inputs` block, the
context seed's `limits` keys) plans and runs; a naive client that never sends a result_snapshot completes a
workflow whose every step goes through the gateway (prompt.say and think.driver_prompt included); an observed
100 MB result stays out of the run state; and bad input (mixed forms, a foreach over a string, unknown keys)
gets every problem named with its file, path and fix.
"""

import gzip
import json
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
import yaml

from gateway.think.errors import ThinkError
from gateway.think.observed import unwrapped
from gateway.think.workflow import parse
from tests.harness import hints_of
from tests.think.harness import body_of, failure, gateway_on, past_driver, run_naively, runs_folder

pytestmark = pytest.mark.anyio

SEED = """\
name: seed_v1
version: "1.0.0"
limits:
  max_stdout_bytes: 1048576
  truncation_strategy: tail
  max_context_bytes: 102400
  max_context_tasks: 10
  cleanup_strategy: {type: lru, keep_count: 10}
steps:
  - id: each
    call: k.echo
    foreach: "{{ params.pr_ids }}"
    input_template: {text: "PR {{ item }}"}
    capture_as: echoes
    limits: {max_stdout_bytes: 2097152, cleanup_strategy: most_recent}
  - id: shout
    call: prompt.say
    when: "{{ params.shout }}"
    input_template: {text: LOUD}
  - id: tally
    call: prompt.say
    deps: [each]
    when: not params.shout
    input_template: {text: "{{ echoes | length }} PRs echoed, the last was {{ echoes[-1].text }}."}
    capture_as: told
"""


async def test_a_seed_style_workflow_runs_to_done_for_a_client_that_never_sends_a_snapshot(tmp_path: Path) -> None:
    async with gateway_on(tmp_path, {"seed_v1": SEED}) as client:
        final, taken = await run_naively(client, "seed_v1", {"pr_ids": [101, 102], "shout": False})
        assert taken == ["__driver_bootstrap", "__driver_announce", "each[0]", "each[1]", "tally"]
        assert final["summary"] == "Workflow seed_v1 finished: 5 steps done, 1 skipped."
        state = body_of(await client.call_tool("think.state.get", {"workflow": "seed_v1", "run_id": final["run_id"]}))
        run = state["state"]
        assert run["params"] == {"pr_ids": [101, 102], "shout": False}  # free-form: taken as given
        assert run["steps"]["shout"]["reason"] == "when '{{ params.shout }}' was false"
        assert run["captures"]["told"]["content"]["message"] == "2 PRs echoed, the last was PR 102."
        assert {c["source"] for c in run["captures"].values()} == {"observed"}

        # the braces form of `when` is true the other way round, and free-form params may be anything JSON
        final, taken = await run_naively(client, "seed_v1", {"pr_ids": [], "shout": True, "extra": {"a": 1}})
        assert taken == ["__driver_bootstrap", "__driver_announce", "shout"]


async def test_seed_limit_aliases_become_the_engines_own_keys(tmp_path: Path) -> None:
    async with gateway_on(tmp_path, {"seed_v1": SEED}) as client:
        parsed = body_of(await client.call_tool("think.validate", {"workflow": "seed_v1"}))
        assert parsed["valid"] is True and parsed["errors"] == []
        # the seed's 1 MB / 2 MB ask more than the deployment's 50,000: that is used, and validate says so
        lowered = [(w["path"], w["message"]) for w in parsed["warnings"]]
        assert lowered == [
            ("limits.max_snapshot_bytes", "max_snapshot_bytes 1048576 is above the deployment's 50000: 50000 is used"),
            (
                "steps[0].limits.max_snapshot_bytes",
                "max_snapshot_bytes 2097152 is above the deployment's 50000: 50000 is used",
            ),
        ]
        ins = body_of(
            await client.call_tool("think.plan", {"workflow": "seed_v1", "params": {"pr_ids": [1], "shout": False}})
        )
        assert ins["step_id"] == "__driver_bootstrap"
    workflow = parse(yaml.safe_load(SEED), "seed_v1.yaml")
    assert workflow.limits == {
        "max_snapshot_bytes": 1048576,
        "truncation_strategy": "tail",
        "max_context_bytes": 102400,
        "max_context_tasks": 10,
        "pruning": "lru",
        "keep_count": 10,  # seed 001's retention count, apart from max_context_tasks
    }
    assert workflow.steps[0].limits == {"max_snapshot_bytes": 2097152, "pruning": "most_recent"}
    assert workflow.declares_inputs is False


BARE = """\
name: bare_v1
version: "1"
steps:
  - id: lint
    call: k.echo
    input_template: {text: "rubocop offenses in {{path}}"}
    capture_as: lint_result
"""


async def test_bare_param_names_work_without_inputs_and_a_missing_one_is_refused_at_plan(tmp_path: Path) -> None:
    """The engine seed's own example: `{{path}}` with no `inputs` block. Planned without `path`, the run could
    never pass `lint`: plan says so (UNRESOLVED_VAR naming it) instead of a TEMPLATE_RENDER_ERROR mid-run."""
    async with gateway_on(tmp_path, {"bare_v1": BARE}) as client:
        final, _ = await run_naively(client, "bare_v1", {"path": "app/"})
        state = body_of(await client.call_tool("think.state.get", {"workflow": "bare_v1", "run_id": final["run_id"]}))
        assert state["state"]["steps"]["lint"]["input"] == {"text": "rubocop offenses in app/"}
        (schema,) = (await client.read_resource("workflow://schema/bare_v1")).contents
        assert isinstance(schema, types.TextResourceContents)
        assert json.loads(schema.text)["additionalProperties"] is True

        answer = await client.call_tool("think.plan", {"workflow": "bare_v1", "params": {"paht": "app/"}})
        runs = body_of(await client.call_tool("think.state.list", {"workflow": "bare_v1"}))["runs"]
    body = failure(answer, "UNRESOLVED_VAR")
    (problem,) = body["diagnostics"]
    assert problem["path"] == "steps[0]" and problem["file"].endswith("bare_v1.yaml")
    assert problem["message"] == "step 'lint' reads 'path', which neither the params of this run nor a capture gives"
    assert "Pass 'path' in think.plan's params (given: paht)" in problem["guidance"]
    assert [r["run_id"] for r in runs] == [final["run_id"]]  # nothing was planned


BAD_SEED = """\
name: bad_seed_v1
version: "1.0.0"
tasks: {}
limits:
  max_stdout_bytes: 1000
  max_snapshot_bytes: 2000
  max_stderr_bytes: 262144
  cleanup_strategy: {type: fifo, keep_count: 3}
steps:
  - id: a
    call: prompt.say
    agent: worker
    input_template: {text: hi}
"""


async def test_a_seed_workflow_with_unknown_keys_gets_every_problem_with_file_path_and_fix(tmp_path: Path) -> None:
    async with gateway_on(tmp_path, {"bad_seed_v1": BAD_SEED}) as client:
        body = failure(await client.call_tool("think.plan", {"workflow": "bad_seed_v1"}), "YAML_SCHEMA_VIOLATION")
        report = body_of(await client.call_tool("think.validate", {"workflow": "bad_seed_v1"}))
    paths = {d["path"]: d for d in body["diagnostics"]}
    assert set(paths) == {
        "limits.max_stderr_bytes",
        "limits.max_stdout_bytes",
        "limits.cleanup_strategy",
        "(top level)",
        "steps[0]",
    }
    assert all(d["file"].endswith("bad_seed_v1.yaml") and d["guidance"] for d in body["diagnostics"])
    assert "max_snapshot_bytes" in paths["limits.max_stderr_bytes"]["guidance"]
    assert "alias of max_snapshot_bytes" in paths["limits.max_stdout_bytes"]["guidance"]
    assert "fifo" in paths["limits.cleanup_strategy"]["message"]
    assert "'tasks' was unexpected" in paths["(top level)"]["message"]
    assert (
        "'agent' was unexpected" in paths["steps[0]"]["message"] and "input_template" in paths["steps[0]"]["guidance"]
    )
    assert len(body["details"]) == 5 and all("bad_seed_v1.yaml: " in line for line in body["details"])
    assert report["valid"] is False and report["errors"] == body["diagnostics"]


MIXED = """\
name: mixed_v1
version: "1"
steps:
  - id: both
    call: prompt.say
    when: "{{ params.a }} and params.b"
    input_template: {text: hi}
  - id: loop
    call: prompt.say
    foreach: "{{ params.name }}"
    input_template: {text: "{{ item }}"}
"""


async def test_mixed_forms_in_one_expression_and_a_foreach_over_a_string_are_named(tmp_path: Path) -> None:
    broken = MIXED.replace("{{ params.a }} and params.b", "params.a and params.b")
    workflows = {"mixed_v1": MIXED, "string_loop_v1": broken.replace("mixed_v1", "string_loop_v1")}
    async with gateway_on(tmp_path, workflows) as client:
        body = failure(await client.call_tool("think.plan", {"workflow": "mixed_v1"}), "TEMPLATE_RENDER_ERROR")
        assert body["diagnostics"][0]["path"] == "steps[0]"
        assert "mixes an expression with template text" in body["details"]
        assert body["details"].startswith(str(tmp_path / "workflows" / "mixed_v1.yaml"))
        assert "exactly one `{{ … }}`" in body["guidance"]

        params = {"a": True, "b": True, "name": "abc"}
        ins = body_of(await client.call_tool("think.plan", {"workflow": "string_loop_v1", "params": params}))
        ref = {"workflow": "string_loop_v1", "run_id": ins["run_id"]}
        await client.call_tool(ins["call"], ins["input"])
        ins = body_of(await client.call_tool("think.next", {**ref, "step_id": ins["step_id"]}))
        await client.call_tool(ins["call"], ins["input"])  # the announcement: its deps then settle the foreach
        body = failure(
            await client.call_tool("think.next", {**ref, "step_id": ins["step_id"]}), "TEMPLATE_RENDER_ERROR"
        )
        assert "string_loop_v1.yaml: steps.loop.foreach: '{{ params.name }}' is str, not a list" in body["details"]


GRAPH_ERRORS = """\
name: three_wrongs_v1
version: "1"
inputs:
  x: {type: string}
steps:
  - id: first
    call: prompt.say
    deps: [ghost]
    input_template: {text: "{{ nowhere }}"}
  - id: second
    call: nope.missing_tool
    input_template: {text: "{{ params.x }}"}
"""


async def test_validate_and_plan_list_every_graph_problem_at_once(tmp_path: Path) -> None:
    async with gateway_on(tmp_path, {"three_wrongs_v1": GRAPH_ERRORS}) as client:
        report = body_of(await client.call_tool("think.validate", {"workflow": "three_wrongs_v1"}))
        body = failure(await client.call_tool("think.plan", {"workflow": "three_wrongs_v1"}), "UNKNOWN_STEP")
    assert report["valid"] is False
    found = [(e["error"], e["path"]) for e in report["errors"]]
    assert found == [
        ("UNKNOWN_STEP", "steps[0].deps"),
        ("UNRESOLVED_VAR", "steps[0]"),
        ("UNKNOWN_TOOL", "steps[1].call"),
    ]
    assert all(e["file"].endswith("three_wrongs_v1.yaml") and e["guidance"] for e in report["errors"])
    assert body["diagnostics"] == report["errors"]
    assert "(and 2 more problems: see diagnostics)" in body["details"]


BIG = """\
name: big_v1
version: "1"
steps:
  - id: fetch
    call: k.blob
    input_template: {n: 104857600}
    capture_as: blob
    limits: {max_snapshot_bytes: 4096, truncation_strategy: head}
"""


async def test_an_observed_100_mb_result_is_spilled_and_the_run_state_keeps_a_preview(tmp_path: Path) -> None:
    async with gateway_on(tmp_path, {"big_v1": BIG}) as client:
        ins = body_of(await client.call_tool("think.plan", {"workflow": "big_v1", "params": {}}))
        ref = {"workflow": "big_v1", "run_id": ins["run_id"]}
        for _ in range(2):  # the driver's two steps
            await client.call_tool(ins["call"], ins["input"])
            ins = body_of(await client.call_tool("think.next", {**ref, "step_id": ins["step_id"]}))
        assert ins["step_id"] == "fetch"
        with anyio.fail_after(120):
            result = await client.call_tool("k.blob", ins["input"])
        assert any("Step `fetch`" in h for h in hints_of(result))
        state_file = anyio.Path(runs_folder(tmp_path / "state", "big_v1")) / f"{ins['run_id']}.json"
        held = json.loads(await state_file.read_bytes())["observed"]["fetch"]
        assert (await state_file.stat()).st_size < 50_000  # the preview, not 100 MB
        assert held["truncated"] is True and held["bytes"] > 100 * 2**20
        assert held["result"].startswith("--- Output (showing first")
        spilled = await anyio.Path(held["file_path"]).read_bytes()
        assert len(gzip.decompress(spilled)) > 100 * 2**20

        final = body_of(await client.call_tool("think.next", {**ref, "step_id": "fetch"}))
        assert final["done"] is True
        assert (await state_file.stat()).st_size < 50_000
        capture = json.loads(await state_file.read_bytes())["captures"]["blob"]
        assert capture["truncated"] is True and capture["source"] == "observed" and capture["file_path"]


@pytest.mark.parametrize(
    ("view", "recorded"),
    [
        ({"result": '{"key": "SHOP-17"}'}, {"key": "SHOP-17"}),  # FastMCP's wrapped str (mcp-atlassian)
        ({"text": ' {"a": [1]}'}, {"a": [1]}),  # a text-only tool answering JSON
        ({"text": "[1, 2]"}, {"text": "[1, 2]"}),  # not an object: kept as text
        ({"text": "{not json"}, {"text": "{not json"}),
        ({"text": "On branch main"}, {"text": "On branch main"}),
        ({"result": '{"a": 1}', "other": 2}, {"result": '{"a": 1}', "other": 2}),  # a real structured result
    ],
)
def test_json_text_results_are_recorded_as_the_object_inside(view: dict[str, Any], recorded: Any) -> None:
    assert unwrapped(view) == recorded


# Seed 001's shapes, as its own examples write them: `loop: {type: repeat, count: N}` on a task, and the
# `hooks: post_task: checkpoint_and_prune` block (here at the top of the workflow file).
REPEAT = """\
name: repeat_v1
version: "1.0.0"
hooks:
  # Prune context after every 10 tasks
  post_task:
    - checkpoint_and_prune:
        every: 10
        strategy: highest_relevance
        keep_count: 20
steps:
  - id: generate_100_reports
    call: local.report
    loop:
      type: repeat
      count: 3
    input_template: {n: "{{ item }}", of: "{{ loop.length }}"}
    capture_as: report
"""


async def test_seed_001s_repeat_loop_and_prune_hook_are_accepted_and_honoured(tmp_path: Path) -> None:
    workflow = parse(yaml.safe_load(REPEAT), "repeat_v1.yaml")
    assert workflow.limits == {"prune_every": 10, "pruning": "highest_relevance", "keep_count": 20}
    async with gateway_on(tmp_path, {"repeat_v1": REPEAT}) as client:
        ins = await past_driver(client, body_of(await client.call_tool("think.plan", {"workflow": "repeat_v1"})))
        inputs = []
        while not ins["done"]:
            inputs.append(ins["input"])
            ref = {"workflow": "repeat_v1", "run_id": ins["run_id"], "step_id": ins["step_id"]}
            ins = body_of(await client.call_tool("think.next", {**ref, "result_snapshot": {"ok": True}}))
    assert inputs == [{"n": 0, "of": 3}, {"n": 1, "of": 3}, {"n": 2, "of": 3}]  # a lone expression keeps its type
    assert ins["artifacts"] == ["report[0]", "report[1]", "report[2]"]


def test_a_loop_other_than_repeat_or_beside_foreach_is_refused_with_the_shape_to_write() -> None:
    bad = yaml.safe_load(REPEAT)
    bad["steps"][0]["loop"] = {"type": "while", "count": 3}
    with pytest.raises(ThinkError) as caught:
        parse(bad, "repeat_v1.yaml")
    assert caught.value.extra["diagnostics"][0]["path"] == "steps[0].loop"
    bad["hooks"] = {"pre_task": ["run_script"]}
    with pytest.raises(ThinkError) as caught:
        parse(bad, "repeat_v1.yaml")
    assert {d["path"] for d in caught.value.extra["diagnostics"]} == {"hooks", "steps[0].loop"}


# Seed 003 nests params: `{"params": {"jira": {"ticket_id": "ABV-123"}}}`.
NESTED = """\
name: nested_v1
version: "1"
steps:
  - id: fetch
    call: local.fetch
    input_template: {ticket: "{{ params.jira.ticket_id }}", title: "{{ params.jira.title | default('') }}"}
"""


async def test_a_nested_param_a_step_reads_is_checked_at_plan(tmp_path: Path) -> None:
    async with gateway_on(tmp_path, {"nested_v1": NESTED}) as client:
        given = {"workflow": "nested_v1", "params": {"jira": {"project": "ABV"}}}
        refused = failure(await client.call_tool("think.plan", given), "UNRESOLVED_VAR")
        good = {"workflow": "nested_v1", "params": {"jira": {"ticket_id": "ABV-123"}}}
        ins = await past_driver(client, body_of(await client.call_tool("think.plan", good)))
    assert "'params.jira.ticket_id'" in refused["details"]
    assert '{"jira": {"ticket_id": "…"}}' in refused["diagnostics"][0]["guidance"]
    assert ins["input"] == {"ticket": "ABV-123", "title": ""}
