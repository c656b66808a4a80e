"""Size guard for `think.next` result snapshots: pass small ones, truncate big ones with a warning, or reject."""

import json
import sys
from collections.abc import Iterator
from itertools import islice
from typing import Any, Literal

from pydantic_core import to_json

from gateway.results import cut, utf8_len
from gateway.think.errors import ThinkError

SUMMARY_KEYS = 5
SAMPLE_ITEMS = 3
SAMPLE_BYTES = 200
"""A list summary's sample item stays whole up to this size; a bigger one becomes its kind (`<dict(12)>`)."""
KEEP_DEPTH = 64
"""Nested values kept whole stay far below pydantic_core's ~255-level limit, so the result always serializes."""
MIN_SHARE = 64
GUIDANCE = (
    "Reduce snapshot size by:\n1. Summarizing large outputs\n2. Using file references instead of full contents\n"
    "3. Saving detailed data to file and returning path\n\nSee driver prompt 'Payload Discipline' section."
)
_META = ("__truncated", "__original_size_bytes", "__truncation_warning", "__dropped_keys")
_DROPPED_RESERVE = len('"__dropped_keys":,') + 20
_END = object()


class _TooDeep(Exception):
    pass


def _leaf(value: Any) -> bytes:
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
            yield _leaf(item)
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
            yield comma + _leaf(key if isinstance(key, str) else str(key)) + b":"
        else:
            item = child
            if comma:
                yield comma


def _bounded_size(value: Any, limit: int = sys.maxsize, max_depth: int = sys.maxsize) -> int | None:
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
        return _bounded_size(value) or 0


def kind(value: Any) -> str:
    """A short type-and-length label: `str(1200)` (characters), `list(3)`, `dict(4)`, `int`, `null`."""
    if isinstance(value, str | list | tuple | dict):
        name = "dict" if isinstance(value, dict) else "str" if isinstance(value, str) else "list"
        return f"{name}({len(value)})"
    return "null" if value is None else type(value).__name__


def _cut_string(text: str, budget: int) -> str:
    if len(text) * 4 <= budget:  # fast path: cannot exceed the budget whatever the characters
        return text
    total = utf8_len(text)
    return text if total <= budget else f"{cut(text, budget)}... [TRUNCATED: {total} bytes total]"


def _sample(item: Any) -> Any:
    if isinstance(item, str):
        return _cut_string(item, SAMPLE_BYTES)
    if isinstance(item, dict | list | tuple) and _bounded_size(item, SAMPLE_BYTES, 8) is None:
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


def _shrink(value: Any, budget: int) -> Any:
    if isinstance(value, str):
        return _cut_string(value, budget)
    if isinstance(value, dict | list | tuple) and value and _bounded_size(value, budget, KEEP_DEPTH) is None:
        return summarize(value, budget)
    # Small nested values stay whole: templates of later steps can still read them.
    return value


def _fit(source: dict[Any, Any], budget: int, room: int, greedy: bool) -> tuple[dict[Any, Any], int, bool]:
    """(entries shrunk to `budget`, dropped count, overflowed) within `room` bytes; greedy: skip what does not fit."""
    kept: dict[Any, Any] = {}
    used = dropped = 0
    for index, (key, value) in enumerate(source.items()):
        if key in _META:
            continue
        if greedy and room - used < 8:  # nothing fits any more (`"":0,` is 5 bytes): count the rest unseen
            dropped += len(source) - index
            break
        small = _shrink(value, budget)
        size = len(_leaf(key if isinstance(key, str) else str(key))) + len(json_bytes(small)) + 2  # `:` and `,`
        if used + size <= room:
            kept[key] = small
            used += size
        elif not greedy:
            return kept, dropped, True
        else:
            dropped += 1
    return kept, dropped, False


def _truncate(snapshot: Any, size: int, max_bytes: int, max_string_bytes: int, reason: str) -> dict[Any, Any]:
    source = snapshot if isinstance(snapshot, dict) else {"value": snapshot}
    warning = (
        f"result_snapshot was {size} bytes (limit {max_bytes}){reason}: strings over "
        f"{max_string_bytes} bytes were cut and large nested structures summarized. Send summaries, counts and "
        "file:line references instead of full contents; save large data to a file and return its path."
    )
    meta: dict[str, Any] = {"__truncated": True, "__original_size_bytes": size, "__truncation_warning": warning}
    room = max_bytes - len(to_json(meta)) - 2 - _DROPPED_RESERVE
    # The seed's rule first (strings cut at max_string_bytes); if that overflows, every key gets an equal
    # share of the limit, and only then are keys dropped, so as many top-level keys as possible survive.
    kept, dropped, overflowed = _fit(source, max_string_bytes, room, greedy=False)
    if overflowed:
        share = max(MIN_SHARE, min(max_string_bytes, room // max(1, len(source)) - 64))
        kept, dropped, _ = _fit(source, share, room, greedy=True)
    body = {**kept, **meta, **({"__dropped_keys": dropped} if dropped else {})}
    if json_size(body) > max_bytes:  # only when max_bytes cannot even hold the markers: best effort
        body = {**meta, "__truncation_warning": "truncated; resend a compact summary", "__dropped_keys": len(source)}
    return body


def guard(
    snapshot: Any,
    *,
    step_id: str,
    max_bytes: int = 50_000,
    max_string_bytes: int = 5_000,
    mode: Literal["truncate", "reject"] = "truncate",
) -> tuple[Any, dict[str, Any]]:
    """`(snapshot, info)` when it fits, else its truncated form; info: original_bytes, final_bytes, truncated.

    A snapshot nested too deeply for pydantic_core (~255 levels) counts as over the limit whatever its size:
    the run state could not be saved with it.

    Raises:
        ThinkError: PAYLOAD_TOO_LARGE in `reject` mode (the seed's body: message, current_step,
            snapshot_size_bytes, max_allowed_bytes).
    """
    reason = ""
    try:
        size = len(to_json(snapshot, fallback=str))
    except ValueError:
        size, reason = json_size(snapshot), ", nested too deeply (or not valid text) to store as is"
    if size <= max_bytes and not reason:
        return snapshot, {"original_bytes": size, "final_bytes": size, "truncated": False}
    if mode == "reject":
        why = f"is {reason[2:]}" if reason else f"exceeded the {max_bytes}-byte limit"
        message = f"result_snapshot {why} (actual: {size} bytes, limit: {max_bytes})"
        raise ThinkError(
            "PAYLOAD_TOO_LARGE",
            message,
            GUIDANCE,
            message=message,
            current_step=step_id,
            snapshot_size_bytes=size,
            max_allowed_bytes=max_bytes,
        )
    body = _truncate(snapshot, size, max_bytes, max_string_bytes, reason)
    return body, {"original_bytes": size, "final_bytes": json_size(body), "truncated": True}
