"""Hostile arguments to the Think tools: every argument is checked against the schema its tool serves in
tools/list before anything acts on it (a string "false" never forces or clears), names and ids have one
stated shape, and a run id can never reach another run's files."""

import json
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client

from gateway.hosted.contracts import KINDS
from gateway.think.format import NAME_MAX, NAME_PATTERN
from gateway.think.state import LATEST
from tests.harness import http_client, http_gateway, text_of, write_config
from tests.think import harness

pytestmark = pytest.mark.anyio

VALID: dict[str, Any] = {"workflow": "sink_v1", "run_id": "r1", "step_id": "sink", "schema": "counted"}
WRONG: dict[str, Any] = {"string": 5, "boolean": "false", "object": ["a"], "array": "a", "integer": True}


def ok(result: types.CallToolResult) -> dict[str, Any]:
    assert not result.is_error, text_of(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def invalid(result: types.CallToolResult) -> dict[str, Any]:
    """An isError INVALID_PARAMS body; its guidance lists the tool's arguments."""
    assert result.is_error, text_of(result)
    body: dict[str, Any] = json.loads(text_of(result))
    assert body["error"] == "INVALID_PARAMS", body
    assert "(* = required)" in body["guidance"], body
    return body


async def at_sink(client: Client, run_id: str) -> dict[str, Any]:
    """sink_v1 planned as `run_id`, its driver steps done (the bootstrap observed, as a client does)."""
    ins = ok(await client.call_tool("think.plan", {"workflow": "sink_v1", "params": {"label": "x"}, "run_id": run_id}))
    ok(await client.call_tool(ins["call"], ins["input"]))
    ref = {"workflow": "sink_v1", "run_id": run_id}
    ok(await client.call_tool("think.next", {**ref, "step_id": "__driver_bootstrap"}))
    ins = ok(await client.call_tool("think.next", {**ref, "step_id": "__driver_announce", "result_snapshot": {}}))
    assert ins["step_id"] == "sink"
    return ins


async def test_a_string_false_neither_forces_a_step_nor_clears_a_run(tmp_path: Path) -> None:
    async with harness.think_client(tmp_path) as client:
        await at_sink(client, "r1")
        ref = {"workflow": "sink_v1", "run_id": "r1", "step_id": "sink"}
        ok(await client.call_tool("think.next", {**ref, "result_snapshot": {"v": 1}}))
        body = invalid(await client.call_tool("think.next", {**ref, "result_snapshot": {"v": 2}, "force": "false"}))
        assert body["details"] == ["`force` = 'false' (string): expected a boolean"]
        body = invalid(await client.call_tool("think.reset", {"workflow": "sink_v1", "run_id": "r1", "force": "no"}))
        assert body["details"] == ["`force` = 'no' (string): expected a boolean"]
        state = ok(await client.call_tool("think.state.get", {"workflow": "sink_v1", "run_id": "r1"}))["state"]
        assert state["captures"]["sink"]["content"] == {"v": 1}  # neither replaced nor cleared


async def test_every_think_argument_of_the_wrong_type_is_refused_by_name(tmp_path: Path) -> None:
    """Driven by the schemas tools/list serves: what is declared is what is enforced, for every argument."""
    async with harness.think_client(tmp_path) as client:
        served = [t for t in (await client.list_tools()).tools if t.name.startswith(("think.", "prompt."))]
        assert len(served) == 12
        tried = 0
        for tool in served:
            properties: dict[str, Any] = tool.input_schema["properties"]
            base = {k: VALID.get(k, "x") for k in tool.input_schema.get("required", [])}
            for name, spec in properties.items():
                wrong = "nope" if "enum" in spec else WRONG[spec["type"]]
                body = invalid(await client.call_tool(tool.name, {**base, name: wrong}))
                assert body["details"] == [body["details"][0]] and body["details"][0].startswith(
                    f"`{name}` = {wrong!r} ({KINDS[type(wrong)]})"
                ), (tool.name, body)
                tried += 1
            body = invalid(await client.call_tool(tool.name, {**base, "forse": True}))
            assert body["details"] == [f"`forse` is not an argument of {tool.name}"]
            for name in tool.input_schema.get("required", []):
                body = invalid(await client.call_tool(tool.name, {k: v for k, v in base.items() if k != name}))
                assert body["details"] == [f"`{name}` is required"]
        assert tried >= 30


async def test_a_5000_character_schema_name_is_invalid_params_naming_the_limit(tmp_path: Path) -> None:
    async with harness.think_client(tmp_path) as client:
        body = invalid(await client.call_tool("think.validate", {"schema": "x" * 5000, "response": {}}))
        assert body["details"][0].startswith("`schema` = 'xxx") and "5000 characters" in body["details"][0]
        assert f"at most {NAME_MAX} characters" in body["details"][0]
        assert NAME_PATTERN in body["guidance"]
        body = invalid(await client.call_tool("think.validate", {"schema": "../counted", "response": {}}))
        assert NAME_PATTERN in body["details"][0]
        verdict = ok(await client.call_tool("think.validate", {"schema": "counted", "response": {"count": 1}}))
        assert verdict["valid"] is False  # a well-formed name still reaches the schema


@pytest.mark.parametrize("order", [("X", "X.json"), ("X.json", "X")])
async def test_a_run_id_ending_in_json_never_meets_another_runs_files(tmp_path: Path, order: tuple[str, str]) -> None:
    # max_snapshot_bytes 1000: the observed driver prompt (3.6 kB) is cut, so its whole value spills to disk
    async with harness.think_client(tmp_path, max_snapshot_bytes=1000) as client:
        for run_id in order:
            await at_sink(client, run_id)
        states = [
            ok(await client.call_tool("think.state.get", {"workflow": "sink_v1", "run_id": run_id}))["state"]
            for run_id in order
        ]
    for run_id, state in zip(order, states, strict=True):
        spilled = anyio.Path(state["captures"]["__driver"]["file_path"])
        assert await spilled.is_file() and spilled.parent.name == f"{run_id}.files"
    folder = anyio.Path(harness.runs_folder(tmp_path / "state", "sink_v1"))
    runs = sorted([p.name async for p in folder.glob("*.json") if p.stem != LATEST])
    assert runs == ["X.json", "X.json.json"]


@pytest.mark.parametrize("run_id", ["x" * (NAME_MAX + 1), "a/b", "a..b", ".hidden", "a\nb", ""])
async def test_a_run_id_of_the_wrong_shape_is_refused_with_the_pattern_and_length(tmp_path: Path, run_id: str) -> None:
    async with harness.think_client(tmp_path) as client:
        plan = {"workflow": "sink_v1", "params": {"label": "x"}, "run_id": run_id}
        body = invalid(await client.call_tool("think.plan", plan))
        assert body["details"][0].startswith("`run_id` = ")
        assert NAME_PATTERN in body["guidance"] and f"at most {NAME_MAX} characters" in body["guidance"]
    assert not (tmp_path / "state").exists() or not list((tmp_path / "state").rglob("*.json"))


async def test_the_gateways_own_tools_check_their_arguments_before_acting(tmp_path: Path) -> None:
    """gateway.read_output {"length": true} read one byte; now every argument is checked by its served schema."""
    async with harness.think_client(tmp_path) as client:
        served = [t for t in (await client.list_tools()).tools if t.name.startswith("gateway.")]
        assert {t.name for t in served} >= {"gateway.status", "gateway.read_output"}
        result = await client.call_tool("gateway.read_output", {"id": "f" * 24, "length": True})
        assert result.is_error and text_of(result).startswith(
            "Invalid arguments for gateway.read_output: `length` = True (boolean): expected an integer."
        )
        assert "offset (integer ≥ 0), length (integer ≥ 1)" in text_of(result)  # a longer length is clamped
        for tool in served:
            base = dict.fromkeys(tool.input_schema.get("required", []), "f" * 24)
            for name, spec in tool.input_schema["properties"].items():
                wrong = WRONG[spec["type"]]
                result = await client.call_tool(tool.name, {**base, name: wrong})
                assert result.is_error and f"`{name}` = {wrong!r}" in text_of(result), text_of(result)
            result = await client.call_tool(tool.name, {**base, "verbose": 1})
            assert result.is_error and f"`verbose` is not an argument of {tool.name}" in text_of(result)


async def test_both_eras_over_http_get_the_same_refusals(tmp_path: Path) -> None:
    """A real gateway process on HTTP: the plain-call lane (2026-era) and the SDK path (2025-era) both reach
    the in-process servers' one check."""
    think = {"workflows_dirs": [str(harness.FIXTURES)], "state_dir": str(tmp_path / "state")}
    async with http_gateway(write_config(tmp_path, {}, think=think)) as base:
        for mode in ("auto", "legacy"):
            async with http_client(base, mode=mode) as client:
                body = invalid(await client.call_tool("think.reset", {"workflow": "sink_v1", "force": "false"}))
                assert body["details"] == ["`force` = 'false' (string): expected a boolean"], mode
                result = await client.call_tool("gateway.read_output", {"id": "f" * 24, "length": True})
                assert result.is_error and "`length` = True (boolean)" in text_of(result), mode


async def test_thousands_of_unknown_arguments_get_a_short_answer(tmp_path: Path) -> None:
    async with harness.think_client(tmp_path) as client:
        junk = {f"junk{i}": i for i in range(5000)}
        body = invalid(await client.call_tool("think.state.list", {"workflow": "sink_v1", **junk}))
        assert body["details"][0] == "`junk0` is not an argument of think.state.list"
        assert body["details"][-1] == "… and 4990 more problems" and len(body["details"]) == 11
