"""find_tools' answer (gateway.middleware.exposure.find): small by default, whole with detail."""

import mcp.types as types
from pydantic_core import to_json

from gateway.middleware.exposure.find import ONE_LINE, FindRequest, answer, one_line
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


def test_five_hits_answer_in_at_most_1500_chars_with_name_one_line_and_required() -> None:
    index = SearchIndex()
    index.build([wordy(i) for i in range(8)])
    found = answer(
        FindRequest("open a merge request", 5, None, False), index.search("merge request", limit=5), str, 20_000
    )
    body = found.structured_content
    assert body is not None and len(body["tools"]) == 5
    text = found.content[0].text if isinstance(found.content[0], types.TextContent) else ""
    assert len(text) <= 1_500 and len(to_json(body)) <= 1_500
    for hit in body["tools"]:
        assert hit["description"] == "Create a merge request from a source branch into a target branch of a project."
        assert hit["required"][0] == "project_id" and len(hit["required"]) == 5
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
    assert "1. gh.issues — Search the issues." in block.text
    assert 'not there, call it through gateway.call_tool {"name": <name>' in block.text
