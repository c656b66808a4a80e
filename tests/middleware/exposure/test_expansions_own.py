"""The gateway's own tools' expansion pack (config/expansions/mcp-doorway.json): current with what the gateway lists,
under any separator, and what finds an own tool through `gateway.find_tools` when the tool's own words do not."""

import json
import re
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest

from bench.find_quality import catalog
from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.config.bundled import default_config
from gateway.middleware.exposure.expansions import description_hash, packs_folder, shipped_for
from gateway.middleware.exposure.listed import OWN_SERVERS
from gateway.middleware.exposure.search import SearchIndex
from tests.harness import connected, write_config

pytestmark = pytest.mark.anyio

OWN_PACK = "mcp-doorway.json"


async def catalog_of(config: Path) -> list[tuple[str, str, types.Tool, str]]:
    """(exposed name, server, tool, its name on its server) of every tool a real gateway's catalog holds."""
    gateway = Gateway(load_config(config))
    async with gateway.running():
        catalog = await gateway.registry.catalog()
    return [(e.exposed, e.server, e.item, e.original) for e in catalog.tools.values() if isinstance(e.item, types.Tool)]


@pytest.mark.parametrize("namespace", [{}, {"separator": "_", "max_name_length": 16}])
async def test_every_own_tool_has_a_pack_entry_for_its_current_description(
    tmp_path: Path, namespace: dict[str, Any]
) -> None:
    # However the config shapes exposed names (`think_workflows_list` under `_`, shortened under 16 characters), a
    # pack entry is found by the name the tool's server gives it.
    config = write_config(tmp_path, {}, namespace=namespace, think={"state_dir": str(tmp_path / "s")})
    own = [row for row in await catalog_of(config) if row[1] in OWN_SERVERS]
    assert {server for _n, server, _t, _o in own} == {"gateway", "think", "prompt"}
    assert len(own) >= 16
    unmatched = [
        name for name, _s, tool, original in own if not shipped_for(original, description_hash(tool.description or ""))
    ]
    assert unmatched == [], f"an own tool's description changed: rewrite its entry in {OWN_PACK} from the new text"


async def test_the_find_bench_scores_the_own_tools_as_the_gateway_lists_them(tmp_path: Path) -> None:
    # bench.find_quality ranks snapshots (bench/find_quality/*.json): an own tool kept there with an older
    # description misses its pack entry and is scored as a tool no client is shown.
    config = write_config(tmp_path, {}, think={"state_dir": str(tmp_path / "s")})
    live = {
        n: (t.description, t.input_schema) for n, server, t, _o in await catalog_of(config) if server in OWN_SERVERS
    }
    for name in ("everything", "gitlab-jira"):
        kept = {n: (t.description, t.input_schema) for n, server, t in catalog(name) if server in OWN_SERVERS}
        assert kept == live, f"bench/find_quality/{name}.json: refresh its own tools from a live gateway"


def test_the_own_pack_says_truthfully_whose_tools_it_holds_and_how_it_was_written() -> None:
    pack = json.loads((packs_folder() / OWN_PACK).read_text(encoding="utf-8"))
    assert pack["package"].startswith("mcp-doorway (this gateway itself")
    assert "no labelled query" in pack["written"]
    assert {"status", "read_output", "find_tools", "call_tool", "plan", "next", "workflows.list", "say"} <= set(
        pack["tools"]
    )
    assert {name: len(entry["requests"]) for name, entry in pack["tools"].items() if len(entry["requests"]) != 8} == {}


async def test_find_tools_finds_an_own_tool_by_a_request_its_own_words_miss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GATEWAY_DATA", str(tmp_path))  # where the default config keeps outputs and Think's runs
    asked = {  # requests of the pack that neither the tool's name nor its description answers first
        "which workflows can I run here?": "think.workflows.list",
        "run a tool that is not in my list": "gateway.call_tool",
    }
    answers: dict[str, types.CallToolResult] = {}
    async with connected(default_config(), within_s=60) as (gateway, client):
        for query in asked:
            answers[query] = await client.call_tool("gateway.find_tools", {"query": query, "limit": 3})
        catalog = await gateway.registry.catalog()
        rankers = gateway.exposure.index.rankers
    first = {
        q: next((hit["name"] for hit in (a.structured_content or {}).get("tools", [])), None)
        for q, a in answers.items()
    }
    assert first == asked
    # The same catalog and rankers without expansions: the pack is what found them.
    plain = SearchIndex(semantic="semantic" in rankers, expanded=False)
    plain.build([(e.exposed, e.server, e.item) for e in catalog.tools.values() if isinstance(e.item, types.Tool)])
    for query, tool in asked.items():
        assert [h.name for h in plain.search(query, limit=1).hits] != [tool], query


async def test_each_own_request_and_each_own_tools_first_words_find_it_first_in_the_default_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each request fits its tool, not a neighbour (think.plan vs think.next, state.get vs state.list), and the pack
    # takes no tool's own words away from it (a request "workflow runs" of state.list once outranked think.plan for
    # its own "Start a workflow run").
    monkeypatch.setenv("GATEWAY_DATA", str(tmp_path))
    catalog = await catalog_of(default_config())
    index = SearchIndex()
    index.build([(name, server, tool) for name, server, tool, _o in catalog], [o for _n, _s, _t, o in catalog])
    own = [(name, o, tool.description or "") for name, server, tool, o in catalog if server in OWN_SERVERS]
    requests = [
        (request, name) for name, original, text in own for request in shipped_for(original, description_hash(text))
    ]
    first_words = [(re.split(r"[:.;(]", text, maxsplit=1)[0], name) for name, _original, text in own]
    assert len(requests) >= 16 * 8
    found = [
        (query, name, [h.name for h in index.search(query, limit=1).hits]) for query, name in requests + first_words
    ]
    assert [(query, name, hits) for query, name, hits in found if hits != [name]] == []
