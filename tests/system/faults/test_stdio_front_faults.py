"""Hostile lines on the stdio front: every request gets an answer, and the session keeps serving."""

from collections.abc import Iterator

import pytest

from tests.harness import kitchen, write_config
from tests.system.faults.wire import RawStdio, raw_stdio_gateway


@pytest.fixture(scope="module")
def raw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawStdio]:
    config = write_config(tmp_path_factory.mktemp("stdio-front"), {"k": kitchen("k")})
    with raw_stdio_gateway(config) as raw:
        yield raw


def _still_serving(raw: RawStdio) -> None:
    answer = raw.request("after", "tools/list")
    assert answer["id"] == "after" and any(t["name"] == "k.echo" for t in answer["result"]["tools"])


@pytest.mark.parametrize("bad_id", [{"a": 1}, [1], True, False], ids=["object", "array", "true", "false"])
def test_a_request_whose_id_is_not_a_string_or_integer_gets_invalid_request_with_id_null(
    raw: RawStdio, bad_id: object
) -> None:
    answer = raw.request(bad_id, "tools/list")
    assert answer["id"] is None
    assert answer["error"]["code"] == -32600
    assert "id" in answer["error"]["message"] and "string or an integer" in answer["error"]["message"]
    _still_serving(raw)


def test_a_request_with_a_fractional_id_gets_invalid_request_carrying_that_id(raw: RawStdio) -> None:
    answer = raw.request(1.5, "tools/list")
    assert answer["id"] == 1.5 and answer["error"]["code"] == -32600
    _still_serving(raw)


def test_a_request_with_id_null_gets_invalid_request(raw: RawStdio) -> None:
    answer = raw.request(None, "tools/call", {"name": "k.echo", "arguments": {"text": "x"}})
    assert answer["id"] is None and answer["error"]["code"] == -32600
    _still_serving(raw)


def test_string_and_integer_ids_are_answered_normally(raw: RawStdio) -> None:
    for good_id in ("s-1", 7, 0, -3):
        answer = raw.request(good_id, "tools/call", {"name": "k.echo", "arguments": {"text": "hi"}})
        assert answer["id"] == good_id and answer["result"]["content"][0]["text"] == "hi"


def test_a_notification_gets_no_answer_and_the_next_request_is_answered(raw: RawStdio) -> None:
    raw.send({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}})
    _still_serving(raw)


def test_broken_lines_get_parse_or_invalid_request_errors(raw: RawStdio) -> None:
    raw.send(b'{"jsonrpc":"2.0","id":5,"method":')
    assert raw.receive()["error"]["code"] == -32700
    raw.send(b'["not", "an", "object"]')
    assert raw.receive()["error"]["code"] == -32600
    _still_serving(raw)
