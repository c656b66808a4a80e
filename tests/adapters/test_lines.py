"""The linear line splitter behind the stdio adapter: chunk boundaries, the size cap, response ids."""

import json

import mcp.types as types
import pytest

from adapters.lines import BIG_LINE_BYTES, LineSplitter, NotJson, Oversized, parse

pytestmark = pytest.mark.anyio


def feed_all(splitter: LineSplitter, *chunks: bytes) -> list[bytes | Oversized]:
    return [bytes(x) if isinstance(x, bytearray) else x for chunk in chunks for x in splitter.feed(chunk)]


def test_lines_split_across_and_within_chunks_come_out_whole_and_in_order() -> None:
    splitter = LineSplitter(limit=100)
    out = feed_all(splitter, b'{"a":', b"1}\n{", b'"b":2}\n{"c":3}\n\n{"d"', b":4}\n")
    assert out == [b'{"a":1}', b'{"b":2}', b'{"c":3}', b'{"d":4}']
    assert splitter.pending == 0


def test_line_over_limit_is_skipped_without_buffering_and_the_next_line_survives() -> None:
    splitter = LineSplitter(limit=10)
    out = feed_all(splitter, b'{"id":7,', b"x" * 50, b"y" * 50)
    assert out == []
    assert splitter.pending == 108  # counted, not buffered
    out = feed_all(splitter, b'zz\n{"ok":1}\n')
    assert out == [Oversized(110, b'{"id":7,' + b"x" * 50), b'{"ok":1}']


def test_line_over_limit_completed_within_one_chunk_is_reported_with_its_size() -> None:
    splitter = LineSplitter(limit=10)
    out = feed_all(splitter, b"a" * 20 + b"\nshort\n")
    assert out == [Oversized(20, b"a" * 20), b"short"]


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b'{"jsonrpc":"2.0","id":12,"result":{"content":', 12),
        (b'{"jsonrpc": "2.0", "id": "req-\\"1", "error": {', 'req-"1'),
        (b'{"id":3,"jsonrpc":"2.0","result":', 3),
        (b'{"jsonrpc":"2.0","id":4,"method":"sampling/createMessage","params":', None),
        (b'{"jsonrpc":"2.0","method":"notifications/progress","params":', None),
        (b"garbage", None),
    ],
)
def test_response_id_is_recovered_only_from_responses(head: bytes, expected: int | str | None) -> None:
    assert Oversized(10**9, head).response_id() == expected


@pytest.mark.anyio
async def test_big_lines_parse_to_the_same_messages_and_garbage_is_told_apart_from_non_messages() -> None:
    """Ours: lines over 1 MiB take the low-memory path; the front still tells 'not JSON' from 'not JSON-RPC'."""
    text = "é" * 600_000
    line = json.dumps({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": text}]}}).encode()
    assert len(line) > BIG_LINE_BYTES
    message = await parse(bytearray(line))
    assert message == types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    with pytest.raises(NotJson):
        await parse(b'{"jsonrpc": "2.0", "id": 3, "result": "' + b"x" * BIG_LINE_BYTES)
    with pytest.raises(ValueError) as not_a_message:
        await parse(json.dumps({"no": "x" * BIG_LINE_BYTES}).encode())
    assert not isinstance(not_a_message.value, NotJson)
