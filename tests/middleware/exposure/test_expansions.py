"""Expansions: shipped packs (bound to the description they were written for, and current with the real servers)
and learning from use (a search, then a call of what it found), as the search index reads them."""

import json
import shutil
from pathlib import Path

import mcp.types as types
import pytest

from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.middleware.exposure.expansions import Expansions, description_hash, packs_folder, shipped_for
from gateway.middleware.exposure.search import SearchIndex
from gateway.store.local.expansions import LocalExpansions
from tests.harness import write_config

pytestmark = pytest.mark.anyio

ASSIGNABLE = "jira.jira_search_assignable_users"


def tool(name: str, description: str) -> types.Tool:
    return types.Tool(name=name, description=description, input_schema={"type": "object", "properties": {}})


def test_a_pack_entry_applies_only_to_the_description_it_was_written_for() -> None:
    current = "Get current time in a specific timezone"  # mcp-server-time's, as the pinned version lists it
    digest = description_hash(current)
    assert "what time is it now in Tokyo" in shipped_for("get_current_time", digest)  # the server's own name
    assert shipped_for("get_current_time", description_hash(current + " (changed)")) == ()  # a changed tool: none
    assert shipped_for("convert_time", digest) == ()  # another tool with that text: none


def test_every_shipped_pack_holds_three_to_ten_requests_per_tool_and_says_how_it_was_written() -> None:
    packs = sorted(packs_folder().glob("*.json"))
    assert {p.stem for p in packs} >= {"mcp-gitlab", "mcp-atlassian", "mcp-server-git", "mcp-server-time"}
    for path in packs:
        pack = json.loads(path.read_text(encoding="utf-8"))
        assert "no labelled query" in pack["written"]
        for name, entry in pack["tools"].items():
            assert 3 <= len(entry["requests"]) <= 10, (path.name, name)
            assert len(entry["description_sha256"]) == 16, (path.name, name)


def test_no_shipped_request_is_written_for_two_tools() -> None:
    # The example configs put these servers side by side: a request two tools share tells neither apart.
    written: dict[str, list[str]] = {}
    for path in sorted(packs_folder().glob("*.json")):
        for name, entry in json.loads(path.read_text(encoding="utf-8"))["tools"].items():
            for request in entry["requests"]:
                written.setdefault(" ".join(request.lower().split()), []).append(f"{path.stem}/{name}")
    assert {request: tools for request, tools in written.items() if len(tools) > 1} == {}


async def test_the_packs_match_the_real_git_and_time_servers_tool_for_tool(tmp_path: Path) -> None:
    servers = {
        "git": {"transport": "stdio", "command": shutil.which("mcp-server-git") or "mcp-server-git"},
        "time": {"transport": "stdio", "command": shutil.which("mcp-server-time") or "mcp-server-time"},
    }
    gateway = Gateway(load_config(write_config(tmp_path, servers, think={"state_dir": str(tmp_path / "state")})))
    async with gateway.running():
        catalog = await gateway.registry.catalog()
    real = [e for e in catalog.tools.values() if e.server in servers and isinstance(e.item, types.Tool)]
    assert len(real) >= 14
    unmatched = [e.exposed for e in real if not shipped_for(e.original, description_hash(e.item.description or ""))]
    assert unmatched == [], "a server changed its tools: rewrite their pack entries from the new text"


GIT = [  # as mcp-server-git lists them
    ("git.git_add", "git", tool("git_add", "Adds file contents to the staging area")),
    ("git.git_reset", "git", tool("git_reset", "Unstages all staged changes")),
    ("git.git_commit", "git", tool("git_commit", "Records changes to the repository")),
]


@pytest.mark.parametrize("semantic", [False, True], ids=["lexical", "hybrid"])
def test_a_request_in_users_words_finds_the_tool_through_its_pack_entry(semantic: bool) -> None:
    plain, expanded = SearchIndex(semantic=semantic, expanded=False), SearchIndex(semantic=semantic)
    plain.build(GIT)
    expanded.build(GIT)
    for query in ("undo git add", "clear the staging area"):  # git_reset's pack entry says so; its text does not
        assert plain.search(query, limit=1).hits[0].name == "git.git_add"
        assert expanded.search(query, limit=1).hits[0].name == "git.git_reset"


async def test_a_search_then_a_call_of_a_tool_it_found_teaches_every_query_of_the_turn() -> None:
    learned = Expansions(LocalExpansions())
    learned.searched("s1", "who could take this one", ["jira.jira_get_user_profile"])  # a miss first
    learned.searched("s1", "assignable users", [ASSIGNABLE, "jira.jira_assign_issue"])
    assert await learned.called("s1", ASSIGNABLE) == ["who could take this one", "assignable users"]
    assert learned.learned == {ASSIGNABLE: ["assignable users", "who could take this one"]}
    assert learned.store is not None and await learned.store.all() == learned.learned
    assert await learned.called("s1", ASSIGNABLE) == []  # the call ended the turn


async def test_a_call_of_a_tool_no_search_found_teaches_nothing_and_ends_the_turn() -> None:
    learned = Expansions(LocalExpansions())
    learned.searched("s1", "close the ticket", ["jira.jira_transition_issue"])
    assert await learned.called("s1", "git.git_log") == []
    assert await learned.called("s1", "jira.jira_transition_issue") == []  # that turn is over
    learned.searched("s2", "close the ticket", ["jira.jira_transition_issue"])
    assert await learned.called("s1", "jira.jira_transition_issue") == []  # another session's search is not yours
    assert learned.learned == {}


async def test_a_query_holding_an_address_a_url_or_a_token_is_not_learned() -> None:
    learned = Expansions(LocalExpansions())
    private = [
        "assign PROJ-7 to jane.doe@example.com",
        "read https://intranet.example/secret/plan",
        "rotate CI variable to ghp_Abcdefghijklmnopqrstuvwxyz0123",
    ]
    for query in [*private, "rotate a CI secret"]:
        learned.searched("s1", query, ["gitlab.gitlab_update_variable"])
    assert await learned.called("s1", "gitlab.gitlab_update_variable") == ["rotate a CI secret"]
    assert (
        await learned.store.all() == {"gitlab.gitlab_update_variable": ["rotate a CI secret"]}
        if learned.store
        else False
    )


async def test_the_index_learns_at_its_next_search_and_forgets_what_an_operator_removes() -> None:
    catalog = [
        (
            "jira.jira_transition_issue",
            "jira",
            tool("jira_transition_issue", "Transition a Jira issue to a new status."),
        ),
        ("jira.jira_get_issue", "jira", tool("jira_get_issue", "Get details of a specific Jira issue.")),
    ]
    index = SearchIndex(semantic=False)
    index.expansions = learned = Expansions(LocalExpansions())
    index.build(catalog)
    query = "wrap up PROJ-7 as finished"
    assert "jira.jira_transition_issue" not in [h.name for h in index.search(query, limit=2).hits]
    learned.searched("s1", query, ["jira.jira_transition_issue"])  # found by a later search in the turn, say
    await learned.called("s1", "jira.jira_transition_issue")
    assert [h.name for h in index.search(query, limit=1).hits] == ["jira.jira_transition_issue"]
    assert await learned.forget("jira.jira_transition_issue", query) is True
    assert "jira.jira_transition_issue" not in [h.name for h in index.search(query, limit=2).hits]


def test_the_description_hash_is_the_first_16_hex_digits_of_its_sha256() -> None:
    assert description_hash("Convert time between timezones") == "6e9686a4f2f1f637"


async def test_the_listing_shows_what_another_replica_learned_and_forgetting_removes_it_everywhere() -> None:
    shared = LocalExpansions()  # one store behind two replicas' caches
    one, two = Expansions(shared), Expansions(shared)
    one.searched("s1", "hand this ticket over", ["jira.jira_assign_issue"])
    await one.called("s1", "jira.jira_assign_issue")
    assert await two.listing() == {"jira.jira_assign_issue": ["hand this ticket over"]}
    assert await two.forget("jira.jira_assign_issue", "hand this ticket over") is True
    assert await one.listing() == {}
    assert await two.forget("jira.jira_assign_issue") is False
