"""Every Think error code, produced through the real tools of an in-process gateway (STATE_CONFLICT through
two StateStore writers), each an isError result whose text is JSON {error, details, guidance}; and bad input
(5 MB and 2,000-level snapshots, `../` names) that must neither crash the gateway nor leave a partial state file."""

import json
import os
import sys
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from anyio.abc import Process
from mcp import Client

from gateway.session import os_user
from gateway.store.backends import local_runs
from gateway.think.errors import CODES, ThinkError
from gateway.think.format import NAME_PATTERN
from gateway.think.state import LATEST, RunState, StateStore
from tests.harness import ROOT, gateway_params, text_of, write_config
from tests.think import harness

pytestmark = pytest.mark.anyio

FIXTURES = harness.FIXTURES
FLAKY = ROOT / "tests" / "servers" / "flaky.py"
think_client = partial(harness.think_client, max_inline_bytes=10_000_000)  # state.get answers unspilled

DEEPEST_SENDABLE = 252
OWNER = "tester"
"""Levels below the snapshot that mcp.Client still serializes (pydantic_core stops near 255 for the request)."""
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
SEEN: set[str] = set()
"""Codes the tests of this module produced; the last test checks none is missing."""


def ok(result: types.CallToolResult) -> dict[str, Any]:
    assert not result.is_error, text_of(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def failure(result: types.CallToolResult, code: str) -> dict[str, Any]:
    """The isError body: it has error (== code), details and guidance."""
    assert result.is_error, text_of(result)
    body: dict[str, Any] = json.loads(text_of(result))
    assert body["error"] == code, body
    assert body["details"] and isinstance(body["guidance"], str) and body["guidance"], body
    SEEN.add(code)
    return body


async def call(client: Client, tool: str, **args: Any) -> types.CallToolResult:
    return await client.call_tool(tool, args)


async def past_driver(client: Client, ins: dict[str, Any]) -> dict[str, Any]:
    """Run the injected __driver_bootstrap (through the gateway: observed) and __driver_announce steps."""
    assert ins["step_id"] == "__driver_bootstrap"
    ok(await client.call_tool(ins["call"], ins["input"]))
    ref = {"workflow": ins["workflow"], "run_id": ins["run_id"]}
    ins = ok(await call(client, "think.next", **ref, step_id="__driver_bootstrap"))
    assert ins["step_id"] == "__driver_announce"
    assert ins["input"]["text"].startswith("Think Driver stable-2025-11 is loaded")  # rendered from the capture
    return ok(await call(client, "think.next", **ref, step_id="__driver_announce", result_snapshot={"text": "ok"}))


async def sink_run(client: Client, run_id: str = "r1") -> dict[str, Any]:
    """sink_v1 planned and at its `sink` step."""
    ins = ok(await call(client, "think.plan", workflow="sink_v1", params={"label": "x"}, run_id=run_id))
    ins = await past_driver(client, ins)
    assert ins["step_id"] == "sink"
    return ins


def tool_call(request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


class LineReader:
    """Newline-delimited JSON-RPC on a subprocess's stdin/stdout."""

    def __init__(self, process: Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.stdin, self.stdout, self.buffer = process.stdin, process.stdout, b""

    async def send(self, message: dict[str, Any] | str) -> None:
        text = message if isinstance(message, str) else json.dumps(message)
        await self.stdin.send(text.encode() + b"\n")

    async def receive(self) -> dict[str, Any]:
        while b"\n" not in self.buffer:
            self.buffer += await self.stdout.receive()
        line, _, self.buffer = self.buffer.partition(b"\n")
        message: dict[str, Any] = json.loads(line)
        return message


def no_partial_files(state_dir: Path) -> None:
    assert not list(state_dir.rglob("*.tmp"))
    for path in state_dir.rglob("*.json"):
        if path.stem != LATEST:  # the latest-active pointer is not a run
            RunState.model_validate_json(path.read_bytes())  # every state file is whole


# -- plan-time errors ------------------------------------------------------------------------------------


async def test_plan_errors_unknown_workflow_schema_violation_and_invalid_params(tmp_path: Path) -> None:
    async with think_client(tmp_path) as client:
        body = failure(await call(client, "think.plan", workflow="no_such_flow"), "UNKNOWN_WORKFLOW")
        assert "sink_v1" in body["guidance"]  # names the workflows that exist

        body = failure(await call(client, "think.plan", workflow="bad_schema_v1"), "YAML_SCHEMA_VIOLATION")
        text = "\n".join(body["details"])
        assert "bad_schema_v1.yaml: steps[0].timeout_s" in text  # file and path
        assert "colour" in text

        body = failure(await call(client, "think.plan", workflow="malformed_v1"), "YAML_SCHEMA_VIOLATION")
        assert "malformed_v1.yaml: line" in body["details"][0] and "not valid YAML" in body["details"][0]

        body = failure(await call(client, "think.plan", workflow="sink_v1", params={}), "INVALID_PARAMS")
        assert any("'label' is required" in p for p in body["details"])
        bad = {"label": "x", "rounds": "three"}
        body = failure(await call(client, "think.plan", workflow="sink_v1", params=bad), "INVALID_PARAMS")
        assert body["details"] == ["'rounds' must be integer, got str 'three'"]
        assert "label*: string" in body["guidance"]
        failure(await call(client, "think.plan", workflow="sink_v1", params={"label": 1}), "INVALID_PARAMS")
        failure(await call(client, "think.plan", workflow="sink_v1", params=[1]), "INVALID_PARAMS")
    assert not (tmp_path / "state").exists() or not list((tmp_path / "state").rglob("*.json"))


async def test_graph_errors_name_what_is_wrong(tmp_path: Path) -> None:
    async with think_client(tmp_path) as client:
        body = failure(await call(client, "think.plan", workflow="cycle_v1"), "CYCLIC_DEPENDENCY")
        assert body["details"].endswith("first -> second -> first") or "second -> first -> second" in body["details"]

        body = failure(await call(client, "think.plan", workflow="unknown_step_v1"), "UNKNOWN_STEP")
        assert "'ghost'" in body["details"]

        body = failure(await call(client, "think.plan", workflow="unresolved_v1"), "UNRESOLVED_VAR")
        assert "'nowhere'" in body["details"]

        body = failure(await call(client, "think.plan", workflow="unknown_tool_v1"), "UNKNOWN_TOOL")
        assert "nope.missing_tool" in body["details"]

        # think.validate reports the same diagnostics as data (valid: false), not as a failure.
        report = ok(await call(client, "think.validate", workflow="cycle_v1"))
        assert report["valid"] is False and report["errors"][0]["error"] == "CYCLIC_DEPENDENCY"


@pytest.mark.parametrize(
    ("mode", "needle"),
    [("call", "cannot call functions"), ("dunder", "'__class__'"), ("foreach", "str, not a list")],
)
async def test_templates_that_call_reach_internals_or_loop_over_a_string_fail_cleanly(
    tmp_path: Path, mode: str, needle: str
) -> None:
    async with think_client(tmp_path) as client:
        args = {"workflow": "template_probe_v1", "params": {"mode": mode}, "run_id": "t"}
        body = failure(await call(client, "think.plan", **args), "TEMPLATE_RENDER_ERROR")
        assert needle in body["details"]
        assert "template_probe_v1.yaml: steps." in body["details"]  # names the file and the step
        # the harmless mode plans fine: the expressions themselves are allowed, only their effect is refused
        ok(await call(client, "think.plan", workflow="template_probe_v1", params={"mode": "none"}))


# -- run-time errors -------------------------------------------------------------------------------------


async def test_step_order_duplicates_validation_and_reset_errors(tmp_path: Path) -> None:
    async with think_client(tmp_path) as client:
        ins = await sink_run(client)
        ref = {"workflow": "sink_v1", "run_id": "r1"}

        body = failure(await call(client, "think.next", **ref, step_id="finish", result_snapshot={}), "STEP_NOT_READY")
        assert "waits for ['check']" in body["details"] and "sink" in body["guidance"]
        failure(await call(client, "think.next", **ref, step_id="nope", result_snapshot={}), "UNKNOWN_STEP")
        failure(await call(client, "think.explain", **ref, step_id="nope"), "UNKNOWN_STEP")

        first = ok(await call(client, "think.next", **ref, step_id="sink", result_snapshot={"rows": 3}))
        assert first["step_id"] == "check"
        again = ok(await call(client, "think.next", **ref, step_id="sink", result_snapshot={"rows": 3}))
        assert again["step_id"] == "check" and again["input"] == first["input"]  # same payload: same answer
        assert "duplicate" in again["note"]
        body = failure(
            await call(client, "think.next", **ref, step_id="sink", result_snapshot={"rows": 4}),
            "STEP_ALREADY_COMPLETED",
        )
        assert "force" in body["guidance"]

        body = failure(
            await call(client, "think.next", **ref, step_id="check", result_snapshot={"ok": "yes"}),
            "VALIDATION_FAILED",
        )
        assert body["details"]["errors"] == [{"path": "ok", "message": "'yes' is not of type 'boolean'"}]
        unknown = ok(await call(client, "think.validate", schema="no_such_schema", response={}))  # the seed's shape
        assert unknown["valid"] is False and unknown["errors"][0]["message"] == "no success schema 'no_such_schema'"
        assert ok(await call(client, "think.explain", **ref, step_id="check"))["status"] == "pending"

        failure(await call(client, "think.reset", **ref), "RESET_NOT_ALLOWED")
        body = failure(await call(client, "think.reset", **ref, checkpoint="nope"), "CHECKPOINT_NOT_FOUND")
        assert "sink" in body["guidance"]  # lists the checkpoints there are
        failure(await call(client, "think.debug", **ref, from_step="nope"), "CHECKPOINT_NOT_FOUND")
        assert ins["run_id"] == "r1"
        assert ok(await call(client, "think.state.get", **ref))["state"]["steps"]["check"]["status"] == "pending"
    no_partial_files(tmp_path / "state")


async def test_unknown_prompt_and_runs_and_names_that_would_escape_the_state_dir(tmp_path: Path) -> None:
    async with think_client(tmp_path) as client:
        body = failure(await call(client, "think.driver_prompt", version="nope"), "PROMPT_NOT_FOUND")
        assert "stable-2025-11" in body["details"]
        plan = {"workflow": "sink_v1", "params": {"label": "x"}, "driver_version": "nope", "run_id": "d"}
        body = failure(await call(client, "think.plan", **plan), "PROMPT_NOT_FOUND")  # was an internal error
        assert "'nope'" in body["details"]

        failure(await call(client, "think.state.get", workflow="sink_v1"), "UNKNOWN_RUN")  # no active run
        failure(await call(client, "think.state.get", workflow="sink_v1", run_id="nope"), "UNKNOWN_RUN")
        failure(await call(client, "think.next", workflow="sink_v1", run_id="nope", step_id="sink"), "UNKNOWN_RUN")
        await sink_run(client, run_id="r1")
        attempts: list[tuple[str, dict[str, Any]]] = [
            ("think.state.get", {}),
            ("think.next", {"step_id": "sink", "result_snapshot": {}}),
            ("think.reset", {"force": True}),
            ("think.explain", {}),
            ("think.debug", {}),
        ]
        # a name that is no name is refused by the tool's own schema, which states the shape
        for tool, extra in attempts:
            body = failure(await call(client, tool, workflow="sink_v1", run_id="../x", **extra), "INVALID_PARAMS")
            assert "`run_id` = '../x'" in body["details"][0] and NAME_PATTERN in body["details"][0]
        args = {"workflow": "sink_v1", "params": {"label": "x"}, "run_id": "../../x"}
        failure(await call(client, "think.plan", **args), "INVALID_PARAMS")
        for workflow in ("../x", "../../etc/passwd", "sink_v1/../sink_v1"):
            for tool in ("think.plan", "think.state.get", "think.state.list", "think.workflows.read"):
                body = failure(await call(client, tool, workflow=workflow, run_id="r1"), "INVALID_PARAMS")
                assert f"`workflow` = {workflow!r}" in body["details"][0]
        assert ok(await call(client, "think.state.get", workflow="sink_v1", run_id="r1"))["state"]["run_id"] == "r1"
    # nothing was created outside the state folder, nor anything but the one run inside it
    assert not (tmp_path / "x").exists() and not (tmp_path.parent / "x").exists()
    assert sorted(p.relative_to(tmp_path / "state").as_posix() for p in (tmp_path / "state").rglob("*.json")) == [
        f"{os_user().owner}~sink_v1/r1.json",  # the stdio front's OS user's
        f"{os_user().owner}~sink_v1/{LATEST}.json",  # and the pointer to its latest active run
    ]


async def test_a_stale_writer_gets_state_conflict(tmp_path: Path) -> None:
    first, second = StateStore(*local_runs(tmp_path)), StateStore(*local_runs(tmp_path))
    await first.save(RunState(owner=OWNER, workflow="sink_v1", run_id="r"), expected_version=0)
    mine, theirs = await first.load(OWNER, "sink_v1", "r"), await second.load(OWNER, "sink_v1", "r")
    await first.save(mine, expected_version=mine.version)  # version 2 on disk
    with pytest.raises(ThinkError) as caught:
        await second.save(theirs, expected_version=theirs.version)  # still believes version 1
    body = caught.value.body()
    assert body["error"] == "STATE_CONFLICT" and "at version 2, expected 1" in body["details"]
    assert "think.state.get" in body["guidance"]
    assert (await second.load(OWNER, "sink_v1", "r")).version == 2  # the stale write changed nothing
    assert not list(tmp_path.rglob("*.tmp"))  # noqa: ASYNC240 -- a test's look at the folder
    SEEN.add("STATE_CONFLICT")


# -- size ------------------------------------------------------------------------------------------------


async def test_oversized_snapshot_rejected_when_configured(tmp_path: Path) -> None:
    async with think_client(tmp_path, truncation="reject", max_snapshot_bytes=1000) as client:
        await sink_run(client)
        big = {"rows": ["x" * 100] * 20}
        body = failure(
            await call(client, "think.next", workflow="sink_v1", run_id="r1", step_id="sink", result_snapshot=big),
            "PAYLOAD_TOO_LARGE",
        )
        assert body["current_step"] == "sink" and body["max_allowed_bytes"] == 1000
        assert body["snapshot_size_bytes"] > 2000 and "Summarizing" in body["guidance"]
        explained = ok(await call(client, "think.explain", workflow="sink_v1", run_id="r1", step_id="sink"))
        assert explained["status"] == "pending"
        # The 3.6 KB driver prompt was cut to 1,000 bytes for the context yet its template still read the whole
        # value (sink_run checks the rendered announcement): a capture that is cut is always spilled too.
        driver = ok(await call(client, "think.state.get", workflow="sink_v1", run_id="r1"))["state"]["captures"]
        assert driver["__driver"]["truncated"] is True and await anyio.Path(driver["__driver"]["file_path"]).is_file()


async def test_huge_and_deep_snapshots_are_truncated_or_refused_never_fatal(tmp_path: Path) -> None:
    async with think_client(tmp_path) as client:
        await sink_run(client)
        ref = {"workflow": "sink_v1", "run_id": "r1"}
        huge = {"ok": True, "blob": "x" * 5_000_000}
        ins = ok(await call(client, "think.next", **ref, step_id="sink", result_snapshot=huge))
        assert ins["step_id"] == "check"

        # The deepest object the SDK client serializes: whole it fits the snapshot guard, but the state file
        # nests it a few levels deeper. Truncated or refused with a Think error, never an internal error.
        deep: Any = {"ok": True}
        for _ in range(DEEPEST_SENDABLE):
            deep = {"d": deep}
        result = await call(client, "think.next", **ref, step_id="check", result_snapshot={"ok": True, "d": deep})
        if result.is_error:
            failure(result, "PAYLOAD_TOO_LARGE")
            assert ok(await call(client, "think.explain", **ref, step_id="check"))["status"] == "pending"
            result = await call(client, "think.next", **ref, step_id="check", result_snapshot={"ok": True})
        assert ok(result)["step_id"] == "finish"

        state = ok(await call(client, "think.state.get", **ref))["state"]
        sink = state["captures"]["sink"]["content"]
        assert sink["__truncated"] is True and sink["__original_size_bytes"] > 5_000_000
        assert "__truncation_warning" in sink and len(sink["blob"]) < 10_000
        assert len(json.dumps(state)) < 200_000
        done = ok(await call(client, "think.next", **ref, step_id="finish", result_snapshot={"text": "bye"}))
        assert done["done"] is True
    no_partial_files(tmp_path / "state")


async def test_a_2000_level_snapshot_over_stdio_is_answered_and_the_session_goes_on(tmp_path: Path) -> None:
    """The SDK client cannot even send it: raw JSON-RPC lines to the gateway subprocess."""
    config = write_config(tmp_path, {}, think={"workflows_dirs": [str(FIXTURES)], "state_dir": "state"})
    params = gateway_params(config)
    process = await anyio.open_process(
        [params.command, *params.args], cwd=params.cwd, env={**os.environ, **(params.env or {})}
    )
    lines = LineReader(process)
    try:
        with anyio.fail_after(30):
            await lines.send(INITIALIZE)
            assert "result" in await lines.receive()
            await lines.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            plan = {"workflow": "sink_v1", "params": {"label": "x"}, "run_id": "r"}
            await lines.send(tool_call(2, "think.plan", plan))
            assert "result" in await lines.receive()
            deep = '{"d":' * 2000 + "1" + "}" * 2000
            args = '{"workflow":"sink_v1","run_id":"r","step_id":"__driver_bootstrap","result_snapshot":' + deep + "}"
            await lines.send(
                '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"think.next","arguments":' + args + "}}"
            )
            refused = await lines.receive()
            # The line is answered with its own id (read from its start), so the caller is not left waiting.
            assert refused["id"] == 3 and refused["error"]["code"] in (types.PARSE_ERROR, types.INVALID_REQUEST)
            await lines.send(tool_call(4, "think.state.get", {"workflow": "sink_v1", "run_id": "r"}))
            answer = await lines.receive()
            assert answer["id"] == 4
            state = answer["result"]["structuredContent"]["state"]
            assert state["version"] == 1 and state["steps"]["__driver_bootstrap"]["status"] == "pending"
    finally:
        with anyio.CancelScope(shield=True):
            process.terminate()
            await process.wait()
    no_partial_files(tmp_path / "state")


async def test_an_outcome_test_of_a_step_not_upstream_is_step_not_upstream(tmp_path: Path) -> None:
    flow = """\
        name: w_v1
        version: "1"
        steps:
          - {id: fetch, call: k.echo, input_template: {text: a}}
          - {id: fallback, call: k.echo, when: "failed(fetch)", input_template: {text: b}}
        """
    async with harness.gateway_on(tmp_path, {"w_v1": flow}) as client:
        refused = failure(await call(client, "think.plan", workflow="w_v1"), "STEP_NOT_UPSTREAM")
    assert "'fallback' tests the outcome of 'fetch', which is not upstream of it" in refused["details"]
    assert "Add 'fetch' to the deps of 'fallback'" in refused["diagnostics"][0]["guidance"]


async def test_a_result_reported_before_the_retry_time_is_retry_not_before(tmp_path: Path) -> None:
    flow = """\
        name: w_v1
        version: "1"
        steps:
          - {id: fetch, call: f.fetch, input_template: {key: a, fail_first: 1}, retry: {attempts: 2, backoff: 600}}
        """
    flaky = {"transport": "stdio", "command": sys.executable, "args": [str(FLAKY)]}
    async with harness.gateway_on(tmp_path, {"w_v1": flow}, {"f": flaky}) as client:
        ins = await harness.past_driver(client, ok(await call(client, "think.plan", workflow="w_v1")))
        await client.call_tool(ins["call"], ins["input"])  # fails: attempt 1 of 2, the next not before 600 s
        ref = {"workflow": "w_v1", "run_id": ins["run_id"], "step_id": "fetch"}
        failure(await call(client, "think.next", **ref, result_snapshot={"key": "a"}), "RETRY_NOT_BEFORE")


def test_every_code_was_produced(request: pytest.FixtureRequest) -> None:
    """Runs last in this module (pytest keeps file order); meaningless when only some tests were selected."""
    ran = {item.name.split("[")[0] for item in request.session.items if item.path == request.path}
    if ran != {name for name in globals() if name.startswith("test_")}:
        pytest.skip("only part of this module ran")
    assert CODES - SEEN == set()


async def test_think_errors_carry_only_their_own_guidance(tmp_path: Path) -> None:
    """No generic "[gateway] Next: … retry once" after a Think failure: it would contradict the guidance."""
    async with think_client(tmp_path) as client:
        await sink_run(client)
        ref = {"workflow": "sink_v1", "run_id": "r1"}
        ok(await call(client, "think.next", **ref, step_id="sink", result_snapshot={"rows": 3}))
        invalid = await call(client, "think.next", **ref, step_id="check", result_snapshot={"ok": "yes"})
        unknown = await call(client, "think.plan", workflow="no_such_flow")
    for result, code in ((invalid, "VALIDATION_FAILED"), (unknown, "UNKNOWN_WORKFLOW")):
        body = failure(result, code)
        assert "retry once" not in body["guidance"]
        assert [b.text for b in result.content if isinstance(b, types.TextContent)] == [text_of(result)]
        assert "gateway/hints" not in (result.meta or {})
