"""Seed 000 (driver prompt bootstrap and payload limits) with its own examples: the `understand_change`
snapshot of `code_review_v1` truncated with its structure kept, so the next step's template still reads it."""

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import Histogram, InMemoryMetricReader

from gateway.think.context import Limits
from gateway.think.payloads import Payloads
from gateway.think.snapshot import guard
from gateway.think.state import RunState
from tests.think.harness import body_of, failure, gateway_on, past_driver

pytestmark = pytest.mark.anyio

IMPACT = "Engine core moves to v2."  # 24 bytes, like the audit's


def understand_change() -> dict[str, Any]:
    """The seed's failure case: a 500+ line mermaid diagram, files by category, an impact summary (~126 KB)."""
    lines = "\n".join(f"    Engine->>Step{i % 40}: run step {i} and record its payload size" for i in range(1_850))
    categories = ("removed_engine_core", "added_engine_core", "modified_tools", "specs", "docs")
    files = {c: [f"lib/savant/think/{c}/file_{j:03}.rb" for j in range(50)] for c in categories}
    diagram = f"```mermaid\nsequenceDiagram\n{lines}\n```"
    return {"change_graph": {"sequence_diagram": diagram, "files_by_category": files, "impact_summary": IMPACT}}


def compact(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def test_the_seeds_understand_change_snapshot_keeps_its_structure_within_the_budget() -> None:
    snap = understand_change()
    assert 120_000 < compact(snap) < 130_000 and len(IMPACT.encode()) == 24
    out, info = guard(snap, step_id="understand_change")
    graph = out["change_graph"]
    assert graph["impact_summary"] == IMPACT  # the 24-byte key the next step's template reads
    assert graph["files_by_category"] == snap["change_graph"]["files_by_category"]  # every small leaf
    diagram = snap["change_graph"]["sequence_diagram"]
    assert graph["sequence_diagram"] == diagram[:5_000] + f"... [TRUNCATED: {len(diagram)} bytes total]"
    assert out["__truncated"] is True and out["__original_size_bytes"] == compact(snap)
    assert 15_000 < info["final_bytes"] == compact(out) <= 50_000  # not 466 bytes: only the diagram was cut


CODE_REVIEW = """\
name: understand_v1
version: "1.3"
steps:
  - id: understand_change
    call: local.analyze
    input_template: {}
    capture_as: understand
  - id: report
    call: local.write
    input_template:
      impact: "{{ understand.change_graph.impact_summary }}"
      categories: "{{ understand.change_graph.files_by_category | list }}"
"""


async def test_the_step_after_a_truncated_understand_change_renders_from_what_was_kept(tmp_path: Path) -> None:
    async with gateway_on(tmp_path, {"understand_v1": CODE_REVIEW}) as client:
        ins = await past_driver(client, body_of(await client.call_tool("think.plan", {"workflow": "understand_v1"})))
        ref = {"workflow": "understand_v1", "run_id": ins["run_id"], "step_id": ins["step_id"]}
        ins = body_of(await client.call_tool("think.next", {**ref, "result_snapshot": understand_change()}))
    assert ins["step_id"] == "report"
    assert ins["input"] == {
        "impact": IMPACT,
        "categories": ["removed_engine_core", "added_engine_core", "modified_tools", "specs", "docs"],
    }


LOCAL = """\
name: local_v1
version: "1.3"
steps:
  - {id: first, call: local.analyze, input_template: {}, capture_as: first}
  - {id: second, call: local.analyze, deps: [first], input_template: {}, capture_as: second}
"""


def sized(size: int) -> dict[str, Any]:
    return {"blob": "x" * (size - len('{"blob":""}'))}


async def test_snapshots_near_or_over_the_cap_are_logged_and_the_model_is_told(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="gateway.think.payloads")
    async with gateway_on(tmp_path, {"local_v1": LOCAL}) as client:
        ins = await past_driver(client, body_of(await client.call_tool("think.plan", {"workflow": "local_v1"})))
        ref = {"workflow": "local_v1", "run_id": ins["run_id"]}
        ins = body_of(
            await client.call_tool("think.next", {**ref, "step_id": "first", "result_snapshot": sized(45_000)})
        )
        near = ins.pop("payload_warning")
        final = body_of(
            await client.call_tool("think.next", {**ref, "step_id": "second", "result_snapshot": sized(60_000)})
        )
    assert near == (
        "result_snapshot was 45000 bytes, over the 40000-byte warning threshold (the limit is 50000): send "
        "summaries, counts and file:line references instead of full contents."
    )
    assert final["done"] is True and final["payload_warning"].startswith(
        "result_snapshot was 60000 bytes, over the 50000-byte limit: it was recorded truncated"
    )
    logged = [(r.levelname, r.getMessage().split(": ", 1)[1]) for r in caplog.records if "think.next" in r.getMessage()]
    assert logged[:2] == [
        ("INFO", "result_snapshot 45000 bytes (limit 50000)"),
        ("WARNING", "snapshot of 45000 bytes is over the warning threshold 40000"),
    ]
    assert logged[2][0] == "WARNING" and logged[2][1].startswith("snapshot truncated from 60000 to ")
    assert logged[2][1].endswith(" bytes (limit 50000)") and len(logged) == 3


def test_snapshot_sizes_go_to_a_histogram() -> None:
    reader = InMemoryMetricReader()
    payloads = Payloads(meter=MeterProvider(metric_readers=[reader]).get_meter("test"), log_sizes=False)
    state = RunState(workflow="w", run_id="r")
    for size in (1_000, 45_000, 60_000):
        payloads.guard(state, "s", sized(size), Limits())
    data = reader.get_metrics_data()
    assert data is not None
    (metric,) = [m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics]
    assert metric.name == "think.snapshot.size" and metric.unit == "By"
    assert isinstance(metric.data, Histogram)
    points = {(p.attributes or {}).get("think.truncated"): p for p in metric.data.data_points}
    assert (points[False].count, points[False].sum) == (2, 46_000)
    assert (points[True].count, points[True].sum) == (1, 60_000)
    assert [h.bytes for h in state.history] == [1_000, 45_000, 60_000]


async def test_each_instruction_carries_the_workflow_version_and_a_state_hash_a_stale_one_is_refused(
    tmp_path: Path,
) -> None:
    async with gateway_on(tmp_path, {"local_v1": LOCAL}) as client:
        first = await past_driver(client, body_of(await client.call_tool("think.plan", {"workflow": "local_v1"})))
        ref = {"workflow": "local_v1", "run_id": first["run_id"]}
        old = first["state_hash"]
        step = {**ref, "step_id": "first", "result_snapshot": {"ok": 1}, "state_hash": old}
        second = body_of(await client.call_tool("think.next", step))
        again = body_of(await client.call_tool("think.next", step))  # a retry of the same answer: still a duplicate
        stale = await client.call_tool(
            "think.next", {**ref, "step_id": "second", "result_snapshot": {}, "state_hash": old}
        )
        final = body_of(
            await client.call_tool(
                "think.next", {**ref, "step_id": "second", "result_snapshot": {}, "state_hash": second["state_hash"]}
            )
        )
    assert first["workflow_version"] == second["workflow_version"] == "1.3"
    assert old.startswith("sha256:") and second["state_hash"] != old
    assert again["note"] == "step first was already recorded (duplicate ignored)"
    assert again["state_hash"] == second["state_hash"]
    body = failure(stale, "STATE_CONFLICT")
    assert body["details"] == (
        f"state_hash {old!r} is stale: run {first['run_id']} is at {second['state_hash']} (steps were recorded since)"
    )
    assert "Ready now: second" in body["guidance"]
    assert final["done"] is True
