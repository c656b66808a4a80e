"""Which way each client is listed (DESIGN §14): clients that search tools themselves get every tool with client
hints; the others the budgeted `auto`, counted as the client receives it (the size guard's `_meta` included)."""

from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp import Client

from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.middleware.exposure.listed import ALWAYS_LOAD_KEY, SEARCH_HINT_KEY, definition_chars, hints, search_hint
from gateway.routing.catalog import Entry
from tests.harness import write_config
from tests.servers.kitchen import Kitchen

pytestmark = pytest.mark.anyio

OWN = {"gateway", "think", "prompt"}


async def listed(tmp_path: Path, client: str, *, tools: int = 200, **exposure: Any) -> list[types.Tool]:
    config = write_config(tmp_path, {}, exposure=exposure)
    kitchen = Kitchen("k", None, 0, [f"tool_{n}" for n in range(tools)])
    gateway = Gateway(load_config(config), in_process={"k": lambda: kitchen.server})
    info = types.Implementation(name=client, version="2.1.0")
    async with gateway.running(), Client(gateway.front.server, mode="legacy", client_info=info) as session:
        return list((await session.list_tools()).tools)


@pytest.mark.parametrize("client", ["claude-code", "Visual Studio Code", "codex-mcp-client", "cursor-vscode"])
async def test_a_client_that_searches_natively_gets_every_tool_with_a_search_hint_and_think_loaded_at_once(
    tmp_path: Path, client: str
) -> None:
    tools = await listed(tmp_path, client)
    assert len(tools) > 200  # the flat catalog, not the find/call gate within 40
    assert all((t.meta or {}).get(SEARCH_HINT_KEY) for t in tools)
    loaded = {t.name for t in tools if (t.meta or {}).get(ALWAYS_LOAD_KEY)}
    assert loaded == {"think.plan", "think.next"}  # read_output joins them once something was spilled
    # The own tools' hints start with their shipped requests (config/expansions/mcp-doorway.json), as others' do.
    hint = {t.name: (t.meta or {})[SEARCH_HINT_KEY] for t in tools}
    assert hint["think.workflows.list"].startswith("what workflows available")


@pytest.mark.parametrize("client", ["gemini-cli-mcp-client", "Cline", "windsurf", "some-new-agent"])
async def test_a_client_without_native_search_gets_the_budgeted_auto_without_hints(tmp_path: Path, client: str) -> None:
    tools = await listed(tmp_path, client)
    assert len(tools) <= 40 and sum(definition_chars(t) for t in tools) <= 32_000
    assert "gateway.find_tools" in {t.name for t in tools}
    assert not any(SEARCH_HINT_KEY in (t.meta or {}) for t in tools)


async def test_auto_counts_what_the_client_receives_the_size_guards_meta_and_the_hints_included(
    tmp_path: Path,
) -> None:
    """Claude Code under an `auto` rule is told each tool's inline limit in `_meta` by the size guard, after the
    list is chosen: its 52 characters per tool are part of the budget, and of the own tools' 3,000."""
    exposure: dict[str, Any] = {"clients": [{"client": "claude-code", "mode": "auto", "max_list_chars": 8_000}]}
    (tmp_path / "hinted").mkdir()
    (tmp_path / "plain").mkdir()
    tools = await listed(tmp_path / "hinted", "claude-code", **exposure)
    assert all((t.meta or {}).get("anthropic/maxResultSizeChars") for t in tools)
    assert all((t.meta or {}).get(SEARCH_HINT_KEY) for t in tools)
    assert sum(definition_chars(t) for t in tools) <= 8_000
    plain: dict[str, Any] = {"clients": [{"client": "claude-code", "mode": "auto", "native_search": False}]}
    tools = await listed(tmp_path / "plain", "claude-code", **plain)
    assert sum(definition_chars(t) for t in tools) <= 32_000 and len(tools) <= 40
    assert sum(definition_chars(t) for t in tools if t.name.split(".")[0] in OWN) <= 3_000


def test_a_search_hint_is_a_short_phrase_of_the_search_texts_own_words() -> None:
    hint = search_hint("jira.search_assignable_users Find the users an issue can be assigned to, by project.")
    assert hint == "jira search assignable users find issue can assigned project"
    assert len(search_hint("word" + " another" * 40)) <= 64


def test_a_search_hint_leaves_out_the_values_a_tools_requests_carry() -> None:
    tool = types.Tool(
        name="jira_get_issue", description="Get details of a Jira issue.", input_schema={"type": "object"}
    )
    meta = hints(Entry("jira.jira_get_issue", "jira", "jira_get_issue", tool), False, ["show me ticket PROJ-123"])
    assert meta[SEARCH_HINT_KEY] == "show me ticket jira issue details"
