"""The one mapping from the gateway's failures to what a client sees (`gateway/errors.py`): a tool call's `isError`
result, a JSON-RPC error for other methods, the wire envelope; a downstream's SDK error mapped by what happened (not
by its code); a foreign exception in one line; what a client sent shown cut to a readable size (a name or id may be
any size)."""

import errno

import mcp.types as types
import pytest
from mcp import MCPError

from gateway.errors import (
    DownstreamFailed,
    DownstreamTimeout,
    DownstreamUnavailable,
    TaskNotFound,
    UnknownName,
    describe,
    from_downstream,
    jsonrpc_error,
    to_mcp_error,
    to_tool_result,
)


def test_a_failed_tool_call_is_an_error_result_in_the_models_words() -> None:
    result = to_tool_result(UnknownName("tool", "git.stauts", ["git.status"]))
    assert result.is_error
    assert [c.text for c in result.content if isinstance(c, types.TextContent)] == [
        "Unknown tool 'git.stauts'. Closest known tools: git.status. List tools again to see what is available."
    ]


def test_other_methods_get_a_jsonrpc_error_and_never_the_code_that_means_the_connection_closed() -> None:
    unknown = to_mcp_error(UnknownName("prompt", "nope", []))
    assert (unknown.code, unknown.message) == (
        types.INVALID_PARAMS,
        "Unknown prompt 'nope'. List prompts again to see what is available.",
    )
    lost = DownstreamFailed("git", "the connection was lost", code=types.CONNECTION_CLOSED)
    assert to_mcp_error(lost).code == types.INTERNAL_ERROR  # -32000 would make a client drop its connection


@pytest.mark.parametrize(
    ("lost", "timed_out", "kind", "code", "text"),
    [
        (True, False, DownstreamFailed, types.CONNECTION_CLOSED, "the connection was lost during the call (gone)"),
        (False, True, DownstreamTimeout, types.REQUEST_TIMEOUT, "did not answer within 30 s (its timeout_s)"),
        (False, False, DownstreamFailed, -32000, "failed: gone (error -32000)."),
    ],
)
def test_a_downstreams_error_is_mapped_by_what_happened_not_by_its_code(
    lost: bool, timed_out: bool, kind: type, code: int, text: str
) -> None:
    # A server may answer -32000 itself: that is its answer, not a lost connection.
    mapped = from_downstream("git", MCPError(code=-32000, message="gone"), 30, lost=lost, timed_out=timed_out)
    assert type(mapped) is kind
    assert mapped.code == code and mapped.server == "git"
    assert text in str(mapped)


def test_a_server_that_is_down_is_named_with_its_state_its_last_error_and_what_to_do() -> None:
    assert str(DownstreamUnavailable("git", "down", "cannot start: No such file: 'gti'")) == (
        "Server 'git' is down and cannot take calls right now. Last error: cannot start: No such file: 'gti'. "
        "The gateway retries it in the background; try again shortly or use another server's tools."
    )


def test_a_foreign_exception_reads_as_one_line_unwrapping_single_groups_and_os_errors() -> None:
    missing = FileNotFoundError(errno.ENOENT, "No such file or directory", "gti")
    assert describe(ExceptionGroup("tg", [missing])) == "cannot start: No such file or directory: 'gti'"
    assert describe(ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")) == (
        "ConnectionRefusedError: Connection refused"
    )
    assert describe(ValueError()) == "ValueError: ValueError"
    two = ExceptionGroup("tg", [ValueError("a"), KeyError("b")])
    assert describe(two).startswith("ExceptionGroup: tg (2 sub-exceptions)")


def test_the_wire_envelope_carries_data_only_when_there_is_some() -> None:
    assert jsonrpc_error(7, -32600, "bad") == {"jsonrpc": "2.0", "id": 7, "error": {"code": -32600, "message": "bad"}}
    assert jsonrpc_error(None, -32600, "bad", {"limit": 5})["error"]["data"] == {"limit": 5}


def test_an_unknown_name_of_any_size_is_named_cut_with_its_length() -> None:
    uri = "k://" + "x" * 5000
    message = str(UnknownName("resource", uri, []))
    assert message.startswith(f"Unknown resource {uri[:200]!r}… (5,004 characters).") and len(message) < 300


def test_an_unknown_task_id_of_any_size_is_named_cut_with_its_length() -> None:
    message = str(TaskNotFound("y" * 5000))
    assert message.startswith(f"No task {'y' * 64!r}… (5,000 characters):") and len(message) < 300
    assert str(TaskNotFound("short")).startswith("No task 'short': it never existed")
