"""The find_tools index and session names, without processes: ranking, filters, odd queries, renaming."""

import re

import mcp.types as types
import pytest

from gateway.middleware.exposure.search import MAX_QUERY_CHARS, SearchIndex
from gateway.middleware.exposure.vocabulary import terms, words
from gateway.routing.rename import Names


def tool(name: str, description: str, **params: str) -> types.Tool:
    props = {p: {"type": "string", "description": d} for p, d in params.items()}
    return types.Tool(name=name, description=description, input_schema={"type": "object", "properties": props})


CATALOG = [
    ("gitlab.list_merge_requests", "gitlab", tool("list_merge_requests", "List merge requests of a project.")),
    ("gitlab.getMergeRequestNotes", "gitlab", tool("getMergeRequestNotes", "Comments on one merge request.")),
    ("gitlab.get_job_log", "gitlab", tool("get_job_log", "The trace of a CI job.", job_id="Job id")),
    ("jira.jira_get_issue", "jira", tool("jira_get_issue", "Get a Jira issue by key.", issue_key="e.g. PROJ-1")),
    ("jira.jira_transition_issue", "jira", tool("jira_transition_issue", "Move an issue to a new status.")),
    ("git.git_log", "git", tool("git_log", "Shows the commit logs", max_count="How many commits")),
    ("git.git_status", "git", tool("git_status", "Shows the working tree status")),
]


def index(entries: list[tuple[str, str, types.Tool]] = CATALOG) -> SearchIndex:
    # Without expansions: the git tools' descriptions are mcp-server-git's own, so its shipped pack would apply to
    # them and to no other tool here; these tests are about the rankers (expansions: test_expansions.py).
    built = SearchIndex(expanded=False)
    built.build(entries)
    return built


def test_names_are_split_on_separators_and_camel_case() -> None:
    assert words("gitlab.getMergeRequestNotes") == ["gitlab", "get", "merge", "request", "notes"]
    assert words("a-b/c_d.eHTTPServer") == ["a", "b", "c", "d", "e", "http", "server"]
    assert terms("show the MR for ticket 42") == ["show", "get", "mr", "merge", "request", "ticket", "issue"]


def test_values_in_a_query_or_an_expansion_are_not_words_about_a_tool() -> None:
    assert terms("log 2 hours on PAY-12 for v1.4.0 at 10:30 on 2026-11-29") == ["log", "hours"]
    lexical = SearchIndex(semantic=False)
    lexical.expansions.learned = {"jira.get_worklog": ["who logged hours on PROJ-5"]}
    lexical.build(
        [
            ("jira.get_worklog", "jira", tool("get_worklog", "Get the worklog of an issue.")),
            ("jira.get_board", "jira", tool("get_board", "Get a board.")),
        ]
    )
    # The request's example key ("PROJ-5") met the query's "PROJ-9" as the word "proj": no tool is about it.
    assert [hit.name for hit in lexical.search("the board of PROJ-9", limit=5).hits] == ["jira.get_board"]


def test_a_question_word_ranks_beside_the_querys_other_words_and_never_alone() -> None:
    lexical = SearchIndex(semantic=False)
    lexical.expansions.learned = {"jira.watchers": ["who follows an issue"], "jira.online": ["who is online"]}
    lexical.build(
        [
            ("jira.watchers", "jira", tool("watchers", "The people following one issue, with their account ids.")),
            ("jira.issue_fields", "jira", tool("issue_fields", "Issue fields.")),
            ("jira.online", "jira", tool("online", "Users signed in now.")),
            *((f"jira.board_{n}", "jira", tool(f"board_{n}", "A board.")) for n in range(10)),  # idf: words are rare
        ]
    )
    # Without "who", the tool named for issues ranks first; a tool that only "who" meets is no answer.
    assert [hit.name for hit in lexical.search("who is on this issue", limit=5).hits] == [
        "jira.watchers",
        "jira.issue_fields",
    ]
    assert terms("who is on my issue") == ["who", "my", "issue"]
    assert terms("who can I ask") == ["who", "ask"] and terms("who is it for me") == []


def test_a_value_that_a_tools_name_holds_is_kept_as_a_word_about_that_tool() -> None:
    numbered = SearchIndex(semantic=False)
    numbered.build([(f"k.tool_{n:03}", "k", tool(f"tool_{n:03}", "A synthetic catalog entry.")) for n in range(50)])
    assert [hit.name for hit in numbered.search("synthetic catalog entry 042", limit=2).hits][:1] == ["k.tool_042"]
    assert terms("entry 042 of PAY-12", frozenset({"042"})) == ["entry", "042"]


def test_the_tool_whose_name_the_query_spells_comes_first() -> None:
    found = index().search("show me ticket PROJ-7", limit=3)
    assert found.hits[0].name == "jira.jira_get_issue"
    assert index().search("comments on the MR", limit=1).hits[0].name == "gitlab.getMergeRequestNotes"
    assert index().search("why did the CI job fail", limit=1).hits[0].name == "gitlab.get_job_log"
    assert [h.score for h in found.hits] == sorted((h.score for h in found.hits), reverse=True)


def test_parameters_and_descriptions_are_searched_too() -> None:
    assert index().search("how many commits", limit=1).hits[0].name == "git.git_log"
    assert index().search("working tree", limit=1).hits[0].name == "git.git_status"


def test_server_filter_and_visibility_predicate_cut_the_hits_and_the_total() -> None:
    everything = index().search("issue log status", limit=50)
    only_git = index().search("issue log status", limit=50, server="git")
    assert {h.server for h in only_git.hits} == {"git"} and only_git.total < everything.total
    hidden = index().search("issue", limit=50, visible=lambda name, server: server != "jira")
    assert all(h.server != "jira" for h in hidden.hits)


def test_limit_cuts_hits_but_total_counts_every_match() -> None:
    found = index().search("get issue log status merge", limit=2)
    assert len(found.hits) == 2 and found.total > 2


@pytest.mark.parametrize(
    "query", ['"', "NEAR(a b)", "merge* OR", "a:b", "^x", "(((", "issue AND NOT", "col : value", "\x00 issue"]
)
def test_query_syntax_characters_never_reach_fts5(query: str) -> None:
    index().search(query, limit=5)  # no sqlite3.OperationalError: each word is quoted


def test_queries_of_only_stopwords_or_unknown_words_find_nothing_and_say_so() -> None:
    assert index().search("which of the", limit=5).terms == []
    found = index().search("which of the zyzzyvas", limit=5)
    assert found.hits == [] and found.total == 0 and found.terms == ["which", "zyzzyvas"]


def test_an_overlong_query_is_refused_with_its_size_and_the_limit() -> None:
    with pytest.raises(ValueError, match=f"10,240 characters; the limit is {MAX_QUERY_CHARS:,}"):
        index().search("x" * 10_240, limit=5)


def test_rebuilding_replaces_the_index() -> None:
    built = index()
    built.build([("k.frobnicate", "k", tool("frobnicate", "Frobnicate widgets."))])
    assert [h.name for h in built.search("widgets issue", limit=5).hits] == ["k.frobnicate"]
    assert len(built) == 1


def test_a_thousand_tools_build_and_answer() -> None:
    many = [
        (f"s{i % 10}.tool_{i}", f"s{i % 10}", tool(f"tool_{i}", f"Does thing {i} with widgets.")) for i in range(1000)
    ]
    many.append(("k.rare_frobnicator", "k", tool("rare_frobnicator", "Frobnicates.")))
    found = index(many).search("frobnicator widgets", limit=5)
    assert found.hits[0].name == "k.rare_frobnicator" and found.total == 1001


TRIPLES = [("think", "workflows.list", "think.workflows.list"), ("gateway", "read_output", "gateway.read_output")]


def test_session_names_under_underscore_rewrite_the_gateways_text() -> None:
    names = Names(TRIPLES, "_", 64)
    assert names.to_session("think.workflows.list") == "think_workflows_list"
    assert names.resolve("think_workflows_list") == "think.workflows.list"
    assert names.resolve("think.workflows.list") == "think.workflows.list"  # reference names are accepted too
    text = "Call think.workflows.list, then gateway.read_output {id}; tools are named <server>.<tool>."
    assert (
        names.text(text) == "Call think_workflows_list, then gateway_read_output {id}; tools are named <server>_<tool>."
    )
    assert names.text("see mythink.workflows.list_x and a.gateway.read_output") == (
        "see mythink.workflows.list_x and a.gateway.read_output"
    )  # only whole names
    assert names.deep({"call": "gateway.read_output", "n": [1, "think.workflows.list"]}) == {
        "call": "gateway_read_output",
        "n": [1, "think_workflows_list"],
    }
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", n) for n in names.session.values())


def test_session_names_under_the_dot_separator_change_nothing() -> None:
    names = Names(TRIPLES, ".", 64)
    assert names.identity and names.text("think.workflows.list") == "think.workflows.list"


def test_session_names_keep_an_unprefixed_servers_own_names() -> None:
    names = Names([("fs", "read_file", "read_file"), *TRIPLES], "_", 64, frozenset({"fs"}))
    assert names.to_session("read_file") == "read_file" and names.resolve("read_file") == "read_file"
    assert names.text("Next: fs.read_file, then gateway.read_output.") == "Next: read_file, then gateway_read_output."
