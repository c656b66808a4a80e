"""Big JSON messages written out in slices, so a front never holds a second whole copy of a result.

pydantic's `to_json` builds a growing buffer and then a bytes copy of it next to the result (about
3x the payload). Encoding a plain dump piece by piece holds the result and one escaped copy of its
largest string instead.
"""

import json
from collections.abc import Iterator
from typing import Any

SLICE = 1024 * 1024
STREAM_FROM = 1024 * 1024
"""Messages whose strings add up to more characters than this are written in slices."""

# ASCII output: every character of a slice is one byte, and lone surrogates are escaped, never mis-encoded.
_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"))


def text_size(node: Any, stop: int = STREAM_FROM) -> int:
    """Characters of the strings in a JSON-like value, counted until `stop` (no serialization)."""
    total, todo = 0, [node]
    while todo and total <= stop:
        value = todo.pop()
        if isinstance(value, str):
            total += len(value)
        elif isinstance(value, dict):
            todo.extend(value.values())
        elif isinstance(value, list):
            todo.extend(value)
    return total


def slices(body: Any) -> Iterator[bytes]:
    """`body` (plain JSON data) as compact ASCII JSON in pieces of about `SLICE` bytes."""
    pending: list[str] = []
    for chunk in _ENCODER.iterencode(body):
        pending.append(chunk)
        if len(chunk) >= SLICE:
            pending.pop()
            yield "".join(pending).encode()
            pending = []
            for start in range(0, len(chunk), SLICE):  # ASCII: slices encode 1:1
                yield chunk[start : start + SLICE].encode()
            del chunk
    if pending:
        yield "".join(pending).encode()
