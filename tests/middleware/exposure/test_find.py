"""find_tools' answer (gateway.middleware.exposure.find): small by default, whole with detail."""

import mcp.types as types
from pydantic_core import to_json

from gateway.middleware.exposure.find import ONE_LINE, FindRequest, answer, browse, one_line
from gateway.middleware.exposure.search import Hit, Matches, SearchIndex

LONG = (
    "Create a merge request from a source branch into a target branch of a project. Returns the new MR's iid, "
    "title, state, source and target branches, author, web_url and the pipeline that started.\n\n"
    "Args:\n  project_id: numeric id or URL-encoded path\n  title: the MR's title\n" + "More prose. " * 80
)


def wordy(i: int) -> tuple[str, str, types.Tool]:
    required = ["project_id", "source_branch", "target_branch", "title", "assignee_ids"]
    schema = {"type": "object", "properties": {r: {"type": "string"} for r in required}, "required": required}
    return (
        f"gitlab.merge_request_tool_{i}",
        "gitlab",
        types.Tool(name=f"merge_request_tool_{i}", description=LONG, input_schema=schema),
    )


def test_ten_hits_answer_in_at_most_1500_chars_with_name_an_eight_word_gloss_and_required() -> None:
    index = SearchIndex()
    index.build([wordy(i) for i in range(12)])
    found = answer(
        FindRequest("open a merge request", 10, None, False), index.search("merge request", limit=10), str, 20_000
    )
    body = found.structured_content
    assert body is not None and 8 <= len(body["tools"]) <= 10
    text = found.content[0].text if isinstance(found.content[0], types.TextContent) else ""
    assert len(text) <= 1_500
    for hit in body["tools"]:
        assert hit["gloss"] == "Create a merge request from a source branch…"
        assert hit["required"][0] == "project_id" and len(hit["required"]) == 5
        assert set(hit) == {"name", "gloss", "required"}
    if len(body["tools"]) < 10:
        assert "more left out" in text
    long = "open a merge request " * 45  # near the 1,000-character query limit, and a miss: still within 1,500
    missed = Matches(index.search("merge request", limit=10).hits, 12, ["zyzzyva"])
    found = answer(FindRequest(long, 10, None, False), missed, str, 20_000)
    text = found.content[0].text if isinstance(found.content[0], types.TextContent) else ""
    assert len(text) <= 1_500 and "Browse gitlab's tools" in text
    detailed = answer(FindRequest("mr", 1, None, True), index.search("merge request", limit=1), str, 20_000)
    assert detailed.structured_content is not None and detailed.structured_content["tools"][0]["description"] == LONG


def test_one_line_is_the_first_sentence_of_the_first_line_and_never_long() -> None:
    assert one_line("\n\n  Shows the commit logs\nmore") == "Shows the commit logs"
    assert one_line("Get a tag. Returns name, message.") == "Get a tag."
    assert one_line("v1.2 is read (see docs). Next.") == "v1.2 is read (see docs)."
    cut = one_line("x" * 500)
    assert len(cut) == ONE_LINE and cut.endswith("…")
    assert one_line("") == ""


def test_a_find_answer_says_to_call_an_unlisted_match_through_call_tool() -> None:
    tool = types.Tool(name="issues", description="Search the issues.", input_schema={"type": "object"})
    matches = Matches([Hit("gh.issues", "gh", tool, 1.0)], total=1, terms=["issues"])
    result = answer(FindRequest("issues", 5, None, False), matches, lambda name: name, 20_000)
    [block] = result.content
    assert isinstance(block, types.TextContent)
    assert "1. gh.issues: Search the issues" in block.text
    assert "or via gateway.call_tool {name, arguments}" in block.text


def test_after_a_miss_the_server_with_the_most_hits_is_offered_for_browsing() -> None:
    index = SearchIndex()
    index.build([wordy(i) for i in range(3)])
    hits = index.search("merge request", limit=3).hits
    missed = Matches(hits, 3, ["zyzzyva"])  # the ranker's guesses: none shares a word with the query
    found = answer(FindRequest("zyzzyva", 10, None, False), missed, str, 20_000)
    assert found.structured_content is not None and found.structured_content["browse"] == "gitlab"
    text = found.content[0].text if isinstance(found.content[0], types.TextContent) else ""
    assert 'find_tools {"server": "gitlab"}' in text
    good = answer(FindRequest("merge", 10, None, False), index.search("merge request", limit=3), str, 20_000)
    assert good.structured_content is not None and "browse" not in good.structured_content


def test_browsing_a_server_lists_its_tool_names_within_the_budget() -> None:
    names = [f"gitlab.tool_{i}" for i in range(2_000)]
    found = browse("gitlab", names, 20_000)
    body = found.structured_content
    assert body is not None and body["total"] == 2_000 and 0 < len(body["tools"]) < 2_000
    text = found.content[0].text if isinstance(found.content[0], types.TextContent) else ""
    assert text.startswith("2,000 tools on gitlab (and ") and len(text) + len(to_json(body)) <= 20_000
