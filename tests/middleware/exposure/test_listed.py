"""How one tool reads in a session's list: its session name, a capped description, the task mark on a
downstream's tool only, and an own tool's schema without what only its server checks."""

import mcp.types as types

from gateway.middleware.exposure.listed import as_listed, definition_chars, slim
from gateway.middleware.exposure.rules import Rule
from gateway.routing.catalog import Entry
from gateway.routing.rename import Names

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 64}},
    "additionalProperties": True,
}
MARK = types.ToolExecution(task_support="optional")


def entry(server: str, original: str, description: str) -> Entry:
    return Entry(
        f"{server}.{original}",
        server,
        original,
        types.Tool(name=original, description=description, input_schema=SCHEMA),
    )


def names(*entries: Entry) -> Names:
    return Names(((e.server, e.original, e.exposed) for e in entries), "_", 64)


def rule(description_chars: int | None = None) -> Rule:
    return Rule("search", 40, 32_000, "_", description_chars, True)


def test_a_downstream_tool_is_listed_under_the_session_name_with_the_task_mark_and_its_schema_whole() -> None:
    jira = entry("jira", "get_issue", "Get one issue.")
    tool = as_listed(jira, names(jira), rule(), MARK)
    assert (tool.name, tool.description, tool.execution, tool.input_schema) == (
        "jira_get_issue",
        "Get one issue.",
        MARK,
        SCHEMA,
    )


def test_an_own_tool_carries_no_task_mark_and_speaks_of_tools_in_the_session_names() -> None:
    find = entry("gateway", "find_tools", "Find, then call `<server>.<tool>` (as `gateway.call_tool`).")
    tool = as_listed(find, names(find, entry("gateway", "call_tool", "")), rule(), MARK)
    assert tool.execution is None
    assert tool.description == "Find, then call `<server>_<tool>` (as `gateway_call_tool`)."
    assert tool.input_schema == {"type": "object", "properties": {"name": {"type": "string"}}}


def test_a_description_over_the_cap_is_cut_with_an_ellipsis_and_the_size_is_that_of_the_listed_json() -> None:
    jira = entry("jira", "get_issue", "word " * 30)
    tool = as_listed(jira, names(jira), rule(40), None)
    assert tool.description is not None and len(tool.description) <= 40 and tool.description.endswith("…")
    assert definition_chars(tool) == len(tool.model_dump_json(by_alias=True, exclude_none=True))


def test_slim_leaves_a_schema_that_is_not_an_object_as_it_is() -> None:
    assert slim(True) is True
    assert slim({"items": {"type": "string", "minLength": 1}}) == {"items": {"type": "string"}}
