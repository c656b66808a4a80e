"""The JSON(C) editor sets one entry and keeps every other byte of the file, laid out as the file is: its indent
unit, one line or many, its line endings, a comment after the last value, a trailing comma."""

import json

import pytest

from gateway.app.jsonc_edit import load, put
from gateway.app.userfile import Invalid

ENTRY = {"url": "http://h/mcp"}


def test_an_entry_added_to_a_tab_indented_file_is_indented_with_tabs() -> None:
    mine = '{\n\t"mcpServers": {\n\t\t"other": {"command": "x"}\n\t}\n}\n'
    assert put(mine, "mcpServers", "gateway", ENTRY) == (
        '{\n\t"mcpServers": {\n\t\t"other": {"command": "x"},\n'
        '\t\t"gateway": {\n\t\t\t"url": "http://h/mcp"\n\t\t}\n\t}\n}\n'
    )


def test_a_file_written_on_one_line_stays_on_one_line() -> None:
    mine = '{"theme": "dark", "mcpServers": {"other": {"command": "x"}}}'
    assert put(mine, "mcpServers", "gateway", ENTRY) == (
        '{"theme": "dark", "mcpServers": {"other": {"command": "x"}, "gateway": {"url": "http://h/mcp"}}}'
    )


def test_the_comma_goes_before_a_comment_on_the_last_values_line_and_crlf_stays_crlf() -> None:
    mine = '{\r\n  "mcpServers": {\r\n    "other": {"command": "x"} // mine\r\n  }\r\n}\r\n'
    edited = put(mine, "mcpServers", "gateway", ENTRY)
    assert edited == (
        '{\r\n  "mcpServers": {\r\n    "other": {"command": "x"}, // mine\r\n'
        '    "gateway": {\r\n      "url": "http://h/mcp"\r\n    }\r\n  }\r\n}\r\n'
    )
    assert "\n" not in edited.replace("\r\n", "")


def test_replacing_an_entry_touches_only_its_own_span() -> None:
    before, after = '// top\n{\n  "mcpServers": {\n    "gateway": ', ',  /* keep */\n    "b": 1,\n  },\n}\n'
    mine = before + '{"command": "old", /* gone with it */ "args": [],}' + after
    assert put(mine, "mcpServers", "gateway", ENTRY) == before + '{\n      "url": "http://h/mcp"\n    }' + after


def test_the_last_of_duplicate_keys_is_the_one_edited_as_parsers_read_it() -> None:
    mine = '{"mcpServers": {"gateway": {"url": "first"}}, "mcpServers": {"gateway": {"url": "second"}}}'
    edited = put(mine, "mcpServers", "gateway", ENTRY)
    assert '"url": "first"' in edited and json.loads(edited)["mcpServers"]["gateway"] == ENTRY


def test_an_empty_file_gets_a_new_document_and_a_comment_only_file_is_invalid() -> None:
    assert json.loads(put("\n", "servers", "gateway", ENTRY)) == {"servers": {"gateway": ENTRY}}
    with pytest.raises(Invalid, match=r"^not valid JSON \(line 2, column 1: Expecting value"):
        load("// nothing yet\n")


def test_an_error_is_one_line_however_many_the_parser_found() -> None:
    with pytest.raises(Invalid) as caught:
        load('{"a": 1 "b": 2 "c": 3}')
    assert str(caught.value) == "not valid JSON (line 1, column 9: Expecting ',' delimiter)"


def test_comments_and_strings_that_look_like_each_other_are_read_as_what_they_are() -> None:
    mine = (
        '{\n  // "mcpServers": { "gateway": {} }\n'
        '  "note": "see http://x/*not a comment*/",\n  /* } */ "mcpServers": {}\n}\n'
    )
    assert load(mine) == {"note": "see http://x/*not a comment*/", "mcpServers": {}}
    edited = put(mine, "mcpServers", "gateway", ENTRY)
    assert edited.startswith(mine[: mine.index('"mcpServers": {}')]) and load(edited)["mcpServers"] == {
        "gateway": ENTRY
    }
    with pytest.raises(Invalid, match=r"^not valid JSON \(line 2, column 10: an unterminated string or comment\)$"):
        load('{"a": 1,\n  "b": 2 /* open')
