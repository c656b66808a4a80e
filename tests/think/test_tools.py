"""The Think tool catalog as a client sees it through the gateway: the twelve tools and their description budget,
successes as structured_content + the same JSON as text, workflow listing modes and the workflow:// resources,
workflows.read, driver_prompt, driver injection in plan, plan idempotence, the latest-active-run default and the
driver version + hash recorded in the state."""

import hashlib
import json
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
import yaml
from mcp import Client, MCPError

from tests.harness import ROOT, text_of
from tests.think.harness import FIXTURES, think_client

pytestmark = pytest.mark.anyio

PROMPTS = ROOT / "prompts"
TOOLS = [
    "think.plan",
    "think.next",
    "think.explain",
    "think.reset",
    "think.driver_prompt",
    "think.workflows.list",
    "think.workflows.read",
    "think.state.get",
    "think.state.list",
    "think.validate",
    "think.debug",
    "prompt.say",
]
GOOD = ["loop_v1", "own_driver_v1", "sink_v1", "template_probe_v1"]
"""Fixture workflows that load (the others load too but fail as graphs, or do not load at all)."""
BROKEN = ["bad_schema_v1", "malformed_v1"]


def ok(result: types.CallToolResult) -> dict[str, Any]:
    """A success: structured_content, and the same object as the JSON text block."""
    assert not result.is_error, text_of(result)
    assert isinstance(result.structured_content, dict)
    assert json.loads(text_of(result)) == result.structured_content
    return result.structured_content


async def call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    return ok(await client.call_tool(tool, args))


def current_driver() -> tuple[str, str, str]:
    """(version, hash, text) of the current driver prompt, read from prompts/ directly."""
    version = yaml.safe_load((PROMPTS / "prompts.yml").read_text(encoding="utf-8"))["current"]
    text = (PROMPTS / f"{version}.md").read_text(encoding="utf-8")
    return version, "sha256:" + hashlib.sha256(text.encode()).hexdigest(), text


async def test_the_twelve_tools_are_listed_with_short_descriptions(tmp_path: Path) -> None:
    async with think_client(tmp_path) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
    assert set(TOOLS) <= set(listed)
    assert sorted(n for n in listed if n.startswith(("think.", "prompt."))) == sorted(TOOLS)
    descriptions = {name: listed[name].description or "" for name in TOOLS}
    assert all(descriptions.values())
    too_long = {name: len(d) for name, d in descriptions.items() if len(d) > 600}
    assert too_long == {}
    assert sum(len(d) for d in descriptions.values()) <= 8000
    assert listed["think.plan"].input_schema["required"] == ["workflow"]
    assert set(listed["think.next"].input_schema["required"]) == {"workflow", "step_id"}  # snapshot optional


async def test_workflow_listing_modes_tags_filter_and_the_deprecated_flag(tmp_path: Path) -> None:
    async with think_client(tmp_path) as client:
        compact = await call(client, "think.workflows.list")
        standard = await call(client, "think.workflows.list", mode="standard")
        detailed = await call(client, "think.workflows.list", mode="detailed")
        tagged = await call(client, "think.workflows.list", tags=["TEST", "loop"])
        filtered = await call(client, "think.workflows.list", filter="driver prompt")
        legacy = await call(client, "think.workflows.list", detailed=True)
        bad_mode = await client.call_tool("think.workflows.list", {"mode": "verbose"})

    assert compact["mode"] == "compact" and "warnings" not in compact
    names = [w["name"] for w in compact["workflows"]]
    assert set(GOOD) <= set(names) and not set(BROKEN) & set(names)
    assert compact["count"] == len(names) and names == sorted(names)
    loop = next(w for w in compact["workflows"] if w["name"] == "loop_v1")
    assert set(loop) == {"name", "description", "tags", "input_summary", "id", "version", "desc"}  # + seed 003's
    assert loop["input_summary"] == "files (array, required), loud (boolean, optional)"
    assert len(loop["description"]) <= 153
    # workflows that do not load are reported apart: their names here, the file and the problem in detailed mode
    assert compact["invalid"]["names"] == BROKEN and compact["invalid"]["count"] == len(BROKEN)
    invalid = " ".join(json.dumps(e) for e in detailed["invalid"]["details"])
    assert all(f"{name}.yaml" in invalid for name in BROKEN)

    assert standard["mode"] == "standard"
    loop_std = next(w for w in standard["workflows"] if w["name"] == "loop_v1")
    assert loop_std["description"].startswith("Echo each file") and set(loop_std) == {
        "name",
        "description",
        "tags",
        "input_summary",
    }
    loop_full = next(w for w in detailed["workflows"] if w["name"] == "loop_v1")
    assert set(loop_full) == {"name", "description", "tags", "version", "author", "inputs", "outputs"}
    assert loop_full["inputs"]["files"]["required"] is True and loop_full["inputs"]["loud"]["default"] is False
    assert len(json.dumps(compact)) < len(json.dumps(detailed))

    assert [w["name"] for w in tagged["workflows"]] == ["loop_v1"]  # every tag must match, case-insensitively
    assert [w["name"] for w in filtered["workflows"]] == ["own_driver_v1"]
    assert legacy["mode"] == "detailed" and "deprecated" in legacy["warnings"][0]
    assert bad_mode.is_error and json.loads(text_of(bad_mode))["error"] == "INVALID_PARAMS"


async def test_workflow_resources_are_readable_through_the_gateway(tmp_path: Path) -> None:
    async with think_client(tmp_path) as client:
        resources = {r.uri for r in (await client.list_resources()).resources}
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        bodies = {}
        for uri in ("workflow://list", "workflow://metadata/loop_v1", "workflow://schema/loop_v1"):
            read = await client.read_resource(uri)
            (content,) = read.contents
            assert isinstance(content, types.TextResourceContents) and content.uri == uri
            assert content.mime_type == "application/json"
            bodies[uri] = json.loads(content.text)
        listed = await call(client, "think.workflows.list")
        with pytest.raises(MCPError, match="no_such_flow"):
            await client.read_resource("workflow://metadata/no_such_flow")

    assert "workflow://list" in resources
    assert {"workflow://metadata/{name}", "workflow://schema/{name}"} <= templates
    assert bodies["workflow://list"]["workflows"] == listed["workflows"]  # the compact listing
    meta = bodies["workflow://metadata/loop_v1"]
    assert meta["name"] == "loop_v1" and meta["step_count"] == 4
    assert {"id": "echo_each", "call": "k.echo", "foreach": "params.files"} in meta["steps"]
    schema = bodies["workflow://schema/loop_v1"]
    assert schema["type"] == "object" and schema["required"] == ["files"]
    assert schema["properties"]["files"]["type"] == "array" and schema["properties"]["loud"]["default"] is False


async def test_workflows_read_gives_the_yaml_or_the_parsed_form(tmp_path: Path) -> None:
    async with think_client(tmp_path) as client:
        raw = await call(client, "think.workflows.read", workflow="loop_v1")
        parsed = await call(client, "think.workflows.read", workflow="loop_v1", format="parsed")
    text = (FIXTURES / "loop_v1.yaml").read_text(encoding="utf-8")
    assert raw == {"workflow": "loop_v1", "workflow_yaml": text}
    assert parsed == {"workflow": "loop_v1", "parsed": yaml.safe_load(text)}


async def test_driver_prompt_and_its_injection_by_plan(tmp_path: Path) -> None:
    version, digest, text = current_driver()
    async with think_client(tmp_path) as client:
        prompt = await call(client, "think.driver_prompt")
        same = await call(client, "think.driver_prompt", version=version)
        injected = await call(client, "think.plan", workflow="sink_v1", params={"label": "x"}, run_id="a")
        injected_state = (await call(client, "think.state.get", workflow="sink_v1", run_id="a"))["state"]
        own = await call(client, "think.plan", workflow="own_driver_v1", run_id="b")
        own_state = (await call(client, "think.state.get", workflow="own_driver_v1", run_id="b"))["state"]

    assert prompt == same == {"version": version, "hash": digest, "prompt_md": text}
    assert injected["step_id"] == "__driver_bootstrap" and injected["call"] == "think.driver_prompt"
    assert injected["input"] == {"version": version}
    assert list(injected_state["steps"])[:3] == ["__driver_bootstrap", "__driver_announce", "sink"]
    assert injected_state["steps"]["__driver_announce"]["call"] == "prompt.say"
    assert injected_state["steps"]["sink"]["deps"] == ["__driver_announce"]  # entry steps wait for the announcement
    assert injected_state["driver"] == {"version": version, "hash": digest}
    # a workflow that fetches the driver itself gets nothing prepended
    assert own["step_id"] == "driver" and list(own_state["steps"]) == ["driver", "hello"]
    assert own_state["driver"] == {"version": version, "hash": digest}


async def test_plan_is_idempotent_for_a_run_id(tmp_path: Path) -> None:
    async with think_client(tmp_path) as client:
        args = {"workflow": "sink_v1", "params": {"label": "x"}, "run_id": "same"}
        first = await call(client, "think.plan", **args)
        version = (await call(client, "think.state.get", workflow="sink_v1", run_id="same"))["state"]["version"]
        again = await call(client, "think.plan", **args)
        runs = await call(client, "think.state.list", workflow="sink_v1")
        after = (await call(client, "think.state.get", workflow="sink_v1", run_id="same"))["state"]["version"]
    assert {k: v for k, v in again.items() if k != "note"} == first
    assert "idempotent" in again["note"]
    assert after == version  # planning again wrote nothing
    assert [r["run_id"] for r in runs["runs"]] == ["same"]


async def test_calls_without_run_id_address_the_latest_active_run(tmp_path: Path) -> None:
    async with think_client(tmp_path) as client:
        older = await call(client, "think.plan", workflow="sink_v1", params={"label": "old"}, run_id="older")
        newer = await call(client, "think.plan", workflow="sink_v1", params={"label": "new"}, run_id="newer")
        assert older["run_id"] == "older" and newer["run_id"] == "newer"
        state = (await call(client, "think.state.get", workflow="sink_v1"))["state"]
        assert state["run_id"] == "newer"
        ins = await call(
            client,
            "think.next",
            workflow="sink_v1",
            step_id="__driver_bootstrap",
            result_snapshot={"version": "stable-2025-11"},
        )
        assert ins["run_id"] == "newer" and ins["step_id"] == "__driver_announce"
        assert (await call(client, "think.explain", workflow="sink_v1"))["run_id"] == "newer"
        # a generated run id when none is given; it becomes the latest
        fresh = await call(client, "think.plan", workflow="sink_v1", params={"label": "fresh"})
        assert fresh["run_id"] not in ("older", "newer")
        assert (await call(client, "think.state.get", workflow="sink_v1"))["state"]["run_id"] == fresh["run_id"]
        # clearing it makes the next most recent active run the default again
        assert (await call(client, "think.reset", workflow="sink_v1", force=True))["cleared"] == fresh["run_id"]
        assert (await call(client, "think.state.get", workflow="sink_v1"))["state"]["run_id"] == "newer"


async def test_every_tool_answers_with_structured_content_equal_to_its_text(tmp_path: Path) -> None:
    """ok() checks it: one successful call of each tool, the run-bound ones on a real run."""
    async with think_client(tmp_path) as client:
        ins = await call(client, "think.plan", workflow="sink_v1", params={"label": "x"}, run_id="r")
        run = {"workflow": "sink_v1", "run_id": "r"}
        driver = await call(client, ins["call"], **ins["input"])
        await call(client, "think.next", **run, step_id="__driver_bootstrap", result_snapshot=driver)
        said = await call(client, "prompt.say", text="hello")
        assert said["message"] == "hello" and said["display"] is True
        await call(client, "think.next", **run, step_id="__driver_announce", result_snapshot=said)
        await call(client, "think.next", **run, step_id="sink", result_snapshot={"rows": 1})
        assert (await call(client, "think.explain", **run, step_id="check"))["depends_on"] == ["sink"]
        assert (await call(client, "think.validate", workflow="sink_v1"))["valid"] is True
        verdict = await call(client, "think.validate", schema="counted", response={"count": -1, "files": []})
        assert verdict["valid"] is False and verdict["errors"][0]["path"] == "count"
        debug = await call(client, "think.debug", **run, from_step="__driver_bootstrap")
        assert debug["checkpoints"] == ["__driver_bootstrap", "__driver_announce", "sink"]
        assert debug["diff"]["sink"] == {"from": "pending", "to": "done"}
        rolled = await call(client, "think.reset", **run, checkpoint="__driver_announce")
        assert rolled["ok"] is True and rolled["instruction"]["step_id"] == "sink"
        assert (await call(client, "think.state.list", workflow="sink_v1"))["runs"][0]["run_id"] == "r"
        for tool in ("think.workflows.list", "think.driver_prompt"):
            await call(client, tool)
        await call(client, "think.workflows.read", workflow="sink_v1")
        await call(client, "think.state.get", **run)


async def test_the_workflow_list_resource_honours_tags_filter_and_mode(tmp_path: Path) -> None:
    async def read(uri: str) -> dict[str, Any]:
        (content,) = (await client.read_resource(uri)).contents
        assert isinstance(content, types.TextResourceContents)
        body: dict[str, Any] = json.loads(content.text)
        return body

    async with think_client(tmp_path) as client:
        tagged = await read("workflow://list?tags=test,LOOP")
        repeated = await read("workflow://list?tags=test&tags=errors&filter=cycle&mode=standard")
        everything = await read("workflow://list")
        for bad, needle in [
            ("?tag=loop", r"Unknown query \[.tag.\]"),
            ("?mode=huge", "huge"),
            ("?mode=a&mode=b", "one mode"),
        ]:
            with pytest.raises(MCPError, match=needle):
                await client.read_resource(f"workflow://list{bad}")
    assert [w["name"] for w in tagged["workflows"]] == ["loop_v1"]  # every tag must match, case-insensitively
    assert [w["name"] for w in repeated["workflows"]] == ["cycle_v1"] and repeated["mode"] == "standard"
    assert everything["count"] > 5 and everything["mode"] == "compact"
