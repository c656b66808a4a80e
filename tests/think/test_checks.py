"""Limits a workflow cannot lift, and mistakes caught at plan and validate time instead of mid-run.

The deployment's `think.max_snapshot_bytes` is a ceiling (seed 000: "configurable per deployment"); a
workflow naming a success schema that does not exist (the engine seed's own `FTSResultV1`), or reading a
variable that neither the params nor a capture gives, is refused by `think.plan` with every problem listed;
`think.validate {schema}` answers `{valid, errors}` like the seed's Validator.
"""

import json
from pathlib import Path
from typing import Any

import pytest

from tests.think.harness import body_of, failure, gateway_on, past_driver

pytestmark = pytest.mark.anyio

RAISES = """\
name: raises_v1
version: "1"
limits: {max_snapshot_bytes: 200000}
steps:
  - id: understand_change
    call: local.analyze
    input_template: {}
    capture_as: change
  - id: tight
    call: local.analyze
    deps: [understand_change]
    input_template: {}
    capture_as: small
    limits: {max_snapshot_bytes: 2000}
"""


def snapshot_of(size: int) -> dict[str, Any]:
    """`{"blob": "xx…"}` of exactly `size` bytes of compact JSON."""
    return {"blob": "x" * (size - len('{"blob":""}'))}


async def captured(client: Any, ins: dict[str, Any], name: str) -> Any:
    body = body_of(await client.call_tool("think.state.get", {"workflow": ins["workflow"], "run_id": ins["run_id"]}))
    return body["state"]["captures"][name]["content"]


async def test_a_workflow_cannot_raise_the_deployments_snapshot_cap_but_can_lower_it(tmp_path: Path) -> None:
    async with gateway_on(tmp_path, {"raises_v1": RAISES}) as client:
        report = body_of(await client.call_tool("think.validate", {"workflow": "raises_v1"}))
        ins = await past_driver(client, body_of(await client.call_tool("think.plan", {"workflow": "raises_v1"})))
        ref = {"workflow": "raises_v1", "run_id": ins["run_id"]}
        snap = snapshot_of(100_011)  # the audit's case: kept whole under a 50,000 cap before
        ins = body_of(await client.call_tool("think.next", {**ref, "step_id": ins["step_id"], "result_snapshot": snap}))
        change = await captured(client, ins, "change")
        assert change["__truncated"] is True and change["__original_size_bytes"] == 100_011
        assert len(json.dumps(change, separators=(",", ":"))) <= 50_000
        snap = snapshot_of(3_000)  # the step lowers its own cap to 2,000: that holds
        final = body_of(await client.call_tool("think.next", {**ref, "step_id": "tight", "result_snapshot": snap}))
        assert final["done"] is True
        small = await captured(client, ins, "small")
        assert small["__truncated"] is True and len(json.dumps(small, separators=(",", ":"))) <= 2_000
    assert report["valid"] is True
    (warning,) = report["warnings"]
    assert warning["path"] == "limits.max_snapshot_bytes" and warning["file"].endswith("raises_v1.yaml")
    assert warning["message"] == "max_snapshot_bytes 200000 is above the deployment's 50000: 50000 is used"
    assert "raise think.max_snapshot_bytes in the gateway config" in warning["guidance"]


async def test_a_deployment_that_raises_the_cap_lets_the_workflow_use_it(tmp_path: Path) -> None:
    async with gateway_on(tmp_path, {"raises_v1": RAISES}, max_snapshot_bytes=300_000) as client:
        report = body_of(await client.call_tool("think.validate", {"workflow": "raises_v1"}))
        ins = await past_driver(client, body_of(await client.call_tool("think.plan", {"workflow": "raises_v1"})))
        snap = snapshot_of(100_011)
        ref = {"workflow": "raises_v1", "run_id": ins["run_id"], "step_id": ins["step_id"]}
        ins = body_of(await client.call_tool("think.next", {**ref, "result_snapshot": snap}))
        assert await captured(client, ins, "change") == snap
    assert report == {"valid": True, "errors": []}


def test_the_shipped_workflows_fit_the_default_deployment() -> None:
    from gateway.think.checks import over_ceiling
    from gateway.think.library import Library
    from gateway.think.workflow import DEFAULT_DIR

    workflows, broken = Library([DEFAULT_DIR]).all()
    assert len(workflows) == 3 and not broken
    assert [w for wf in workflows for w in over_ceiling(wf, 50_000)] == []


FREE_FORM = """\
name: free_v1
version: "1"
steps:
  - id: lint
    call: local.search
    input_template:
      q: "rubocop offenses in {{path}} since {{ params.since }}"
      limit: "{{ params.limit | default(20) }}"
      scope: "{{ scope if scope is defined else 'all' }}"
    capture_as: lint_result
    success_schema: FTSResultV1
  - id: each
    call: local.read
    foreach: "{{ params.files }}"
    input_template: {path: "{{ item }}", hint: "{{ lint_result.rows | length }}"}
  - id: tests
    call: local.exec
    when: "params.run_tests and lint_result"
    input_template: {cmd: "{% for f in params.files %}{{ f }} {% endfor %}{{ nothing_gives_this }}"}
    success_schema: {type: object, properties: {rows: {type: nonsense}}}
"""


async def test_plan_lists_every_variable_no_param_gives_and_every_missing_schema(tmp_path: Path) -> None:
    async with gateway_on(tmp_path, {"free_v1": FREE_FORM}) as client:
        answer = await client.call_tool("think.plan", {"workflow": "free_v1", "params": {"files": ["a.rb"]}})
        report = body_of(await client.call_tool("think.validate", {"workflow": "free_v1"}))
        runs = body_of(await client.call_tool("think.state.list", {"workflow": "free_v1"}))["runs"]
    body = failure(answer, "UNRESOLVED_VAR")
    found = [(d["error"], d["path"], d["message"].split(" reads ")[-1].split(",")[0]) for d in body["diagnostics"]]
    assert found[:5] == [
        ("UNRESOLVED_VAR", "steps[0]", "'params.since'"),
        ("UNRESOLVED_VAR", "steps[0]", "'path'"),
        ("UNRESOLVED_VAR", "steps[2]", "'nothing_gives_this'"),
        ("UNRESOLVED_VAR", "steps[2]", "'params.run_tests'"),
        ("VALIDATION_FAILED", "steps[0].success_schema", "step 'lint': no success schema 'FTSResultV1'"),
    ]
    assert found[5][:2] == ("VALIDATION_FAILED", "steps[2].success_schema") and len(found) == 6
    assert "the inline schema is not a valid JSON Schema" in body["diagnostics"][5]["message"]
    assert runs == []
    # validate has no params: it names the schemas (and says nothing of the free-form variables)
    assert report["valid"] is False
    assert [(e["error"], e["path"]) for e in report["errors"]] == [
        ("VALIDATION_FAILED", "steps[0].success_schema"),
        ("VALIDATION_FAILED", "steps[2].success_schema"),
    ]
    assert "Known schemas: " in report["errors"][0]["guidance"]


SOMETIMES = """\
name: sometimes_v1
version: "1"
steps:
  - id: only_for_a
    call: local.note
    when: "params.mode == 'a' and params.only_for_a"
    input_template:
      text: "{{ params.extra if params.mode == 'a' else 'none' }}{% if params.mode == 'a' %}{{ extra }}{% endif %}"
"""


async def test_a_variable_read_only_on_a_branch_that_may_not_run_is_not_refused(tmp_path: Path) -> None:
    async with gateway_on(tmp_path, {"sometimes_v1": SOMETIMES}) as client:
        ins = body_of(await client.call_tool("think.plan", {"workflow": "sometimes_v1", "params": {"mode": "b"}}))
        ins = await past_driver(client, ins)
        failure(await client.call_tool("think.plan", {"workflow": "sometimes_v1", "params": {}}), "UNRESOLVED_VAR")
    assert ins["done"] is True  # `when` was false: skipped, never read what mode b lacks


TYPO = """\
name: typo_v1
version: "1"
inputs:
  repo_path: {type: string, required: true}
  base: {type: string}
steps:
  - id: diff
    call: local.exec
    input_template: {cmd: "git -C {{ params.repo_pth }} diff {{ base }}"}
"""


async def test_a_params_typo_is_named_by_validate_and_an_optional_input_without_default_by_plan(
    tmp_path: Path,
) -> None:
    async with gateway_on(tmp_path, {"typo_v1": TYPO}) as client:
        report = body_of(await client.call_tool("think.validate", {"workflow": "typo_v1"}))
        answer = await client.call_tool("think.plan", {"workflow": "typo_v1", "params": {"repo_path": "/r"}})
    assert [(e["error"], e["path"]) for e in report["errors"]] == [("UNRESOLVED_VAR", "steps[0]")]
    assert "'params.repo_pth', which is not an input of typo_v1" in report["errors"][0]["message"]
    body = failure(answer, "UNRESOLVED_VAR")
    assert {d["message"].split(" reads ")[1].split(",")[0] for d in body["diagnostics"]} == {
        "'base'",
        "'params.repo_pth'",
    }


async def test_validate_with_a_schema_answers_valid_and_errors_never_an_error(tmp_path: Path) -> None:
    async with gateway_on(tmp_path, {"typo_v1": TYPO}) as client:
        (tmp_path / "workflows" / "schemas").mkdir()
        (tmp_path / "workflows" / "schemas" / "rows.json").write_text('{"type": "object", "required": ["rows"]}')
        (tmp_path / "workflows" / "schemas" / "broken.json").write_text('{"type": ')

        async def check(**args: Any) -> dict[str, Any]:
            return body_of(await client.call_tool("think.validate", args))

        assert await check(schema="rows") == {"valid": True, "errors": []}
        assert await check(schema="rows", response={"rows": []}) == {"valid": True, "errors": []}
        assert await check(schema="rows", response={}) == {
            "valid": False,
            "errors": [{"path": "(root)", "message": "'rows' is a required property"}],
        }
        unknown = await check(schema="FTSResultV1", response={"rows": []})
        assert unknown["valid"] is False and unknown["errors"][0]["path"] == "(schema)"
        assert unknown["errors"][0]["message"] == "no success schema 'FTSResultV1'"
        assert "Known schemas: broken, rows" in unknown["errors"][0]["guidance"]
        broken = await check(schema="broken")
        assert broken["valid"] is False and "broken.json: not valid JSON" in broken["errors"][0]["message"]


async def test_the_known_schemas_are_those_the_reader_reads_not_a_symlink_out_of_the_folder(tmp_path: Path) -> None:
    async with gateway_on(tmp_path, {"typo_v1": TYPO}) as client:
        schemas = tmp_path / "workflows" / "schemas"
        schemas.mkdir()
        (schemas / "ok.json").write_text('{"type": "object"}')
        (tmp_path / "outside.json").write_text('{"type": "object"}')
        (schemas / "link.json").symlink_to(tmp_path / "outside.json")
        (schemas / "not a name.json").write_text('{"type": "object"}')

        async def check(schema: str) -> dict[str, Any]:
            return body_of(await client.call_tool("think.validate", {"schema": schema, "response": {}}))

        assert await check("ok") == {"valid": True, "errors": []}
        for refused in ("link", "nosuch"):
            error = (await check(refused))["errors"][0]
            assert error["message"] == f"no success schema {refused!r}"
            assert error["guidance"] == "Known schemas: ok."
