"""find_tools' semantic ranker (gateway.middleware.exposure.semantic): the model from its wheel, fused ranking."""

import socket
import subprocess
import sys

import numpy as np
import pytest

from bench.find_quality import catalog
from gateway.middleware.exposure import semantic, vectors
from gateway.middleware.exposure.search import SearchIndex
from tests.harness import ROOT
from tests.middleware.exposure.test_search import CATALOG, tool

WIDER = [
    *CATALOG,
    ("gitlab.delete_branch", "gitlab", tool("delete_branch", "Delete a branch from a project.")),
    ("time.get_current_time", "time", tool("get_current_time", "Get current time in a specific timezone")),
]


def built(**options: bool) -> SearchIndex:
    index = SearchIndex(**options)
    index.build(WIDER)
    return index


def test_the_model_loads_from_the_installed_wheel_with_the_network_unreachable(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*_args: object) -> None:
        raise AssertionError("the model tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    model = vectors.load()
    embedded = model.embed(["delete the branch", "remove a branch", "current time in Paris"])
    assert embedded.shape == (3, 256) and np.allclose(np.linalg.norm(embedded, axis=1), 1, atol=1e-5)
    assert embedded[0] @ embedded[1] > embedded[0] @ embedded[2]  # meaning, not letters, decides


def test_meaning_finds_a_tool_no_word_of_the_query_names() -> None:
    assert built(semantic=False).search("clock in Paris", limit=3).hits == []
    found = built().search("clock in Paris", limit=3)
    assert found.hits[0].name == "time.get_current_time"


def test_fusion_puts_the_tool_both_rankers_agree_on_first() -> None:
    query = "remarks from reviewers on my MR"
    assert built(semantic=False).search(query, limit=2).hits[0].name == "gitlab.list_merge_requests"
    assert built().search(query, limit=2).hits[0].name == "gitlab.getMergeRequestNotes"


def test_rankers_are_said_and_filters_still_cut_semantic_candidates() -> None:
    assert built().rankers == ["lexical", "semantic"] and built(semantic=False).rankers == ["lexical"]
    assert semantic.describe(built().rankers) == {
        "rankers": ["lexical", "semantic"],
        "model": semantic.MODEL,
        "fusion": "scores",
        "problem": None,
    }
    only_git = built().search("clock in Paris", limit=5, server="git")
    assert all(h.server == "git" for h in only_git.hits)
    hidden = built().search("clock in Paris", limit=5, visible=lambda _name, server: server != "time")
    assert all(h.server != "time" for h in hidden.hits)


def test_nonsense_still_finds_nothing() -> None:
    assert built().search("which of the zyzzyvas", limit=5).total == 0


def test_without_the_model_the_lexical_ranker_answers_alone_and_says_why() -> None:
    code = (
        "import sys; sys.modules['wordllama'] = None\n"  # as if the package were not installed
        "from gateway.middleware.exposure import semantic\n"
        "from gateway.middleware.exposure.search import SearchIndex\n"
        "from tests.middleware.exposure.test_semantic import WIDER\n"
        "index = SearchIndex(); index.build(WIDER)\n"
        "print(index.rankers, index.search('delete a branch', limit=1).hits[0].name)\n"
        "print(semantic.problem())\n"
    )
    out = fresh_process(code)
    assert out[0] == "['lexical'] gitlab.delete_branch"
    assert out[1].startswith(f"{semantic.MODEL} could not be loaded") and out[1].endswith("ranking is lexical only")


def test_a_rebuild_embeds_only_the_tools_it_has_not_seen() -> None:
    index = built()
    before = index.search("clock in Paris", limit=1).hits
    embedded: list[list[str]] = []
    model = semantic.embedder()
    assert model is not None
    original = model.embed

    def counting(texts: list[str]) -> vectors.Vectors:
        embedded.append(texts)
        return original(texts)

    model.embed = counting  # type: ignore[method-assign]
    try:
        index.build([*WIDER, ("k.frobnicate", "k", tool("frobnicate", "Frobnicate widgets."))])
    finally:
        del model.embed
    assert embedded == [["frobnicate. Frobnicate widgets."]]
    assert index.search("clock in Paris", limit=1).hits == before
    assert index.search("frobnicate widgets", limit=1).hits[0].name == "k.frobnicate"


def test_a_gateway_imports_no_numpy_until_a_search_needs_the_model() -> None:
    """numpy takes 0.1 to 0.3 s to import: a gateway process nobody searches (most of them) never pays it."""
    code = (
        "import sys\n"
        "import gateway.app.gateway, gateway.app.serve\n"
        "from gateway.middleware.exposure.search import SearchIndex\n"
        "print('numpy' in sys.modules)\n"
        "from tests.middleware.exposure.test_semantic import WIDER\n"
        "index = SearchIndex(); index.build(WIDER)\n"
        "print('numpy' in sys.modules, index.rankers)\n"
    )
    out = fresh_process(code)
    assert out == ["False", "True ['lexical', 'semantic']"]


def fresh_process(code: str) -> list[str]:
    """The lines `code` prints in a new interpreter (what a process loads at its start, the model's cache empty)."""
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    ).stdout.splitlines()


WARMED = """
import sys, tempfile, threading
from pathlib import Path
import anyio
from mcp import Client
from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.middleware.exposure import semantic
from tests.harness import kitchen, write_config

async def main(mode):
    folder = Path(tempfile.mkdtemp())
    config = write_config(folder, {"k": kitchen("k")}, think={"state_dir": str(folder)}, exposure={"mode": mode})
    gateway = Gateway(load_config(config))
    async with gateway.running(), Client(gateway.front.server, mode="legacy") as client:
        await client.list_tools()
        print(semantic.ready.is_set() or any(t.name == "find_tools model" for t in threading.enumerate()))
        if semantic.ready.is_set() or any(t.name == "find_tools model" for t in threading.enumerate()):
            print(await anyio.to_thread.run_sync(semantic.ready.wait, 60), len(gateway.exposure.index))

anyio.run(main, sys.argv[1])
"""


@pytest.mark.parametrize(("mode", "loads"), [("search", True), ("all", False)])
def test_a_list_that_hides_tools_loads_the_model_before_the_first_search(mode: str, loads: bool) -> None:
    """A session listed a subset reaches the rest through find_tools: the model loads meanwhile, off the event loop,
    and the first search pays the index build alone. A session listed everything loads nothing."""
    out = subprocess.run(
        [sys.executable, "-c", WARMED, mode], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    ).stdout.splitlines()
    assert out == (["True", "True 0"] if loads else ["False"])  # loaded, and no index built: no search yet


@pytest.mark.parametrize(
    ("query", "tool", "within"),
    [
        ("is the SLA breached on this service desk request", "jira.jira_get_issue_sla", 10),
        ("file a gitlab issue about the broken login page", "gitlab.gitlab_create_issue", 1),
        ("who is watching this issue", "jira.jira_get_issue_watchers", 1),
    ],
)
def test_a_tool_one_ranker_finds_strongly_is_not_pushed_out_by_ones_both_find_weakly(
    query: str, tool: str, within: int
) -> None:
    """The rankers' scores are fused, not their positions: with reciprocal rank fusion these tuned-on queries (the
    context-economy set, over the GitLab/Jira catalog) ranked their tool past 10th, and 3rd twice."""
    index = SearchIndex()
    index.build(catalog("gitlab-jira"))
    assert tool in [hit.name for hit in index.search(query, limit=within).hits]
