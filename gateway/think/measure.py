"""Compact-JSON measurement of values of any size and depth, short kinds, and the seed's structure summaries."""

import json
import sys
from collections.abc import Iterator
from itertools import islice
from typing import Any

from pydantic_core import to_json

from gateway.results import cut, utf8_len

SUMMARY_KEYS = 5
SAMPLE_ITEMS = 3
SAMPLE_BYTES = 200
"""A list summary's sample item stays whole up to this size; a bigger one becomes its kind (`<dict(12)>`)."""
KEEP_DEPTH = 64
"""Nested values kept whole stay far below pydantic_core's ~255-level limit, so the result always serializes."""
_END = object()


class _TooDeep(Exception):
    pass


def leaf(value: Any) -> bytes:
    try:
        return to_json(value, fallback=str)
    except ValueError:  # lone surrogates: the stdlib escapes them (`\ud800`), which is still valid JSON
        return json.dumps(value, default=str).encode()


def _pieces(value: Any, max_depth: int = sys.maxsize) -> Iterator[bytes]:
    """Compact JSON of `value` piece by piece with an explicit stack of child iterators: any depth, and a
    caller that stops early has paid only for what it read (even of a million-item list).

    Raises:
        _TooDeep: nesting goes past `max_depth`.
    """
    stack: list[tuple[Iterator[Any], bool]] = []  # open containers: (their remaining children, is a dict)
    item: Any = value
    while True:
        comma = b","
        if isinstance(item, dict | list | tuple) and item:
            if len(stack) >= max_depth:
                raise _TooDeep
            is_dict = isinstance(item, dict)
            yield b"{" if is_dict else b"["
            stack.append((iter(item.items()) if isinstance(item, dict) else iter(item), is_dict))
            comma = b""
        else:
            yield leaf(item)
        while stack:  # the next value, closing the containers that are done
            children, is_dict = stack[-1]
            child: Any = next(children, _END)
            if child is not _END:
                break
            stack.pop()
            yield b"}" if is_dict else b"]"
            comma = b","
        else:
            return
        if is_dict:
            key, item = child
            yield comma + leaf(key if isinstance(key, str) else str(key)) + b":"
        else:
            item = child
            if comma:
                yield comma


def bounded_size(value: Any, limit: int = sys.maxsize, max_depth: int = sys.maxsize) -> int | None:
    """Compact-JSON size of `value`, or None as soon as it is known to exceed `limit` bytes or `max_depth` levels."""
    total = 0
    try:
        for piece in _pieces(value, max_depth):
            total += len(piece)
            if total > limit:
                return None
    except _TooDeep:
        return None
    return total


def json_bytes(value: Any) -> bytes:
    """Compact JSON; values nested deeper than pydantic_core serializes (~255 levels) go through the iterative walk."""
    try:
        return to_json(value, fallback=str)
    except ValueError:
        return b"".join(_pieces(value))


def json_size(value: Any) -> int:
    """`len(json_bytes(value))` without building the text when pydantic_core cannot serialize it."""
    try:
        return len(to_json(value, fallback=str))
    except ValueError:
        return bounded_size(value) or 0


def kind(value: Any) -> str:
    """A short type-and-length label: `str(1200)` (characters), `list(3)`, `dict(4)`, `int`, `null`."""
    if isinstance(value, str | list | tuple | dict):
        name = "dict" if isinstance(value, dict) else "str" if isinstance(value, str) else "list"
        return f"{name}({len(value)})"
    return "null" if value is None else type(value).__name__


def cut_string(text: str, budget: int) -> str:
    if len(text) * 4 <= budget:  # fast path: cannot exceed the budget whatever the characters
        return text
    total = utf8_len(text)
    return text if total <= budget else f"{cut(text, budget)}... [TRUNCATED: {total} bytes total]"


def _sample(item: Any) -> Any:
    if isinstance(item, str):
        return cut_string(item, SAMPLE_BYTES)
    if isinstance(item, dict | list | tuple) and bounded_size(item, SAMPLE_BYTES, 8) is None:
        return f"<{kind(item)}>"
    return item


def summarize(value: dict[Any, Any] | list[Any] | tuple[Any, ...], budget: int) -> dict[str, Any]:
    """The seed's `summarize_structure`: a dict's first keys with their kinds; a list's length and first items."""
    if isinstance(value, dict):
        shown = ", ".join(f"{cut(str(k), 40)}: {kind(v)}" for k, v in islice(value.items(), SUMMARY_KEYS))
        more = ", …" if len(value) > SUMMARY_KEYS else ""
        body: dict[str, Any] = {"__summary": f"dict with {len(value)} keys: {shown}{more}", "__type": "dict"}
    else:
        body = {"__summary": f"list with {len(value)} items", "__type": "list"}
        body["__sample"] = [_sample(x) for x in value[:SAMPLE_ITEMS]]
    if json_size(body) > budget:  # a tight share: the headline alone
        body = {"__summary": kind(value), "__type": body["__type"]}
    return body
