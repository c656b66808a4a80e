"""Size guard for `think.next` result snapshots: pass small ones, truncate big ones keeping their shape, or reject.

Truncation keeps what a later step's template reads (seed 000's own `understand_change`: a 24-byte
`impact_summary` beside a 100 KB diagram must survive). One cap applies to every value: a value whose JSON
fits it stays whole, a longer string is cut to it (the seed's `... [TRUNCATED: N bytes total]`), and an object
or list over it keeps its children, each under the same rule; every key of every object stays. The cap is the
largest that fits the budget, at most `max_string_bytes` (the seed's per-string cut), so the largest values are
cut first and small leaves never. Only when even the small values do not fit (a list of a million items) do
objects and lists keep just their first children, the rest counted (`__dropped_keys`, `… N more items`).
"""

import sys
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic_core import to_json

from gateway.think.errors import ThinkError
from gateway.think.measure import KEEP_DEPTH, SAMPLE_BYTES, bounded_size, cut_string, json_size, leaf, summarize

FLOOR = 256
"""A value of at most this many bytes is small: cut only when shortening lists and objects cannot make room."""
GUIDANCE = (
    "Reduce snapshot size by:\n1. Summarizing large outputs\n2. Using file references instead of full contents\n"
    "3. Saving detailed data to file and returning path\n\nSee driver prompt 'Payload Discipline' section."
)
_META = ("__truncated", "__original_size_bytes", "__truncation_warning", "__dropped_keys")
_DROPPED_RESERVE = len('"__dropped_keys":,') + 20
_ALL = sys.maxsize


class _Over(Exception):
    """The value being shrunk has passed its room: this cap (or child count) does not fit."""


@dataclass(slots=True)
class _Fit:
    cap: int
    """No value over this many bytes is kept whole."""
    keep: int
    """Children kept per object or list that is not kept whole."""
    room: int
    top: int
    """The largest cap tried: sizes are measured (and cached) up to it."""
    sizes: dict[tuple[int, int], int | None] = field(default_factory=dict[tuple[int, int], int | None])
    cuts: dict[tuple[int, int], tuple[str, int]] = field(default_factory=dict[tuple[int, int], tuple[str, int]])
    """(id of a long string, cap) -> its cut and that cut's JSON size: attempts cut the same strings again."""
    used: int = 0

    def spend(self, size: int) -> None:
        self.used += size
        if self.used > self.room:
            raise _Over

    def whole(self, value: Any, depth: int) -> int | None:
        """The JSON size of a container that may be kept whole (at most `top` bytes, shallow enough to store)."""
        key = (id(value), depth)
        if key not in self.sizes:
            try:
                size: int | None = len(to_json(value, fallback=str))
            except ValueError:
                size = None
            if size is not None and size <= self.top:
                size = bounded_size(value, self.top, KEEP_DEPTH - depth)  # also refuses what nests too deeply
            self.sizes[key] = size if size is not None and size <= self.top else None
        return self.sizes[key]


def _shrunk(value: Any, depth: int, fit: _Fit) -> Any:
    if isinstance(value, str):
        if len(value) <= 64:  # short: cutting and measuring is cheaper than a cache lookup
            out = cut_string(value, fit.cap)
            fit.spend(len(leaf(out)))
            return out
        key = (id(value), fit.cap)
        if key not in fit.cuts:
            out = cut_string(value, fit.cap)
            fit.cuts[key] = (out, len(leaf(out)))
        out, cost = fit.cuts[key]
        fit.spend(cost)
        return out
    if not isinstance(value, dict | list | tuple) or not value:
        fit.spend(len(leaf(value)))
        return value
    size = fit.whole(value, depth)
    if size is not None and size <= fit.cap:
        fit.spend(size)
        return value
    if depth >= KEEP_DEPTH:  # the state file nests this far below the snapshot: a summary, never deeper
        summary = summarize(value, SAMPLE_BYTES)
        fit.spend(json_size(summary))
        return summary
    return _children(value, depth, fit)


def _children(value: dict[Any, Any] | list[Any] | tuple[Any, ...], depth: int, fit: _Fit) -> Any:
    fit.spend(2)  # the brackets; each child below pays for its comma
    if isinstance(value, dict):
        kept: dict[str, Any] = {}
        for index, (key, item) in enumerate(value.items()):
            if index >= fit.keep:
                fit.spend(len('"__dropped_keys":') + len(str(len(value) - index)) + 1)
                kept["__dropped_keys"] = len(value) - index
                break
            name = key if isinstance(key, str) else str(key)
            fit.spend(len(leaf(name)) + 2)
            kept[name] = _shrunk(item, depth + 1, fit)
        return kept
    items: list[Any] = []
    for index, item in enumerate(value):
        if index >= fit.keep:
            note = f"… {len(value) - index} more items"
            fit.spend(len(leaf(note)) + 1)
            items.append(note)
            break
        fit.spend(1)
        items.append(_shrunk(item, depth + 1, fit))
    return items


def _largest(low: int, high: int, fits: Any) -> int:
    """A large n in [low, high) with fits(n), given fits(low) and not fits(high): within 1/16 of the largest,
    which is as good for the reader and takes half the attempts (each walks up to the budget)."""
    while high - low > max(1, low // 16):
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


def _fitted(source: dict[Any, Any], room: int, max_string_bytes: int) -> dict[str, Any] | None:
    """`source` shrunk into `room` bytes: the largest cap that fits, shortening lists and objects only if needed."""
    top = max(1, max_string_bytes)
    floor = max(16, min(FLOOR, top, room // 8))
    sizes: dict[tuple[int, int], int | None] = {}
    cuts: dict[tuple[int, int], tuple[str, int]] = {}

    def attempt(cap: int, keep: int) -> dict[str, Any] | None:
        try:
            shrunk: dict[str, Any] = _children(source, 0, _Fit(cap, keep, room, top, sizes, cuts))
        except _Over:
            return None
        return shrunk

    keep = _ALL
    shrunk = attempt(top, keep)
    if shrunk is not None:
        return shrunk
    if attempt(floor, keep) is None:  # small values alone overflow: first children only
        if attempt(floor, 0) is None:
            return None
        more = 1
        while attempt(floor, more) is not None:
            more *= 2
        keep = _largest(more // 2, more, lambda k: attempt(floor, k) is not None)
        shrunk = attempt(top, keep)
        if shrunk is not None:
            return shrunk
    return attempt(_largest(floor, top, lambda c: attempt(c, keep) is not None), keep)


def _truncate(snapshot: Any, size: int, max_bytes: int, max_string_bytes: int, reason: str) -> dict[Any, Any]:
    source = snapshot if isinstance(snapshot, dict) else {"value": snapshot}
    source = {k: v for k, v in source.items() if k not in _META}
    warning = (
        f"result_snapshot was {size} bytes (limit {max_bytes}){reason}: every key was kept and the largest values "
        f"cut first (strings end in '[TRUNCATED: N bytes total]', lists and objects that did not fit keep their first "
        "items). Send summaries, counts and file:line references instead of full contents; save large data to a "
        "file and return its path."
    )
    meta: dict[str, Any] = {"__truncated": True, "__original_size_bytes": size, "__truncation_warning": warning}
    room = max_bytes - len(to_json(meta)) - 2 - _DROPPED_RESERVE
    kept = _fitted(source, room, max_string_bytes) if room > 2 else None
    if kept is None:  # only when max_bytes cannot even hold the markers: best effort
        return {**meta, "__truncation_warning": "truncated; resend a compact summary", "__dropped_keys": len(source)}
    dropped = kept.pop("__dropped_keys", None)
    return {**kept, **meta, **({"__dropped_keys": dropped} if dropped else {})}


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
