"""What both call-log backends share (the vocabulary of `gateway.store.base.CallLog`): the bounds, and how a
call is cut to fit them."""

import json
from typing import Any

from gateway import results

ENTRY_BYTES = 16_000
"""A call as kept in Redis is at most this: past it, its notes and then its texts are cut (the page says so)."""
TEXTS = ("before", "after")
NOTES = 10
"""The gateway's notes (hints, bootstrap, spill notice) kept of a call cut to fit, each at most `NOTE_CHARS`."""
NOTE_CHARS = 300
COUNTS_TTL_S = 600.0
"""A replica whose counts are older than this is gone (stopped, or scaled away)."""


def dumped(call: dict[str, Any]) -> bytes:
    return json.dumps(call, separators=(",", ":"), ensure_ascii=False, default=str).encode()


def cut(text: str | None, chars: int) -> str | None:
    if text is None or len(text) <= chars:
        return text
    return text[:chars] + f"\n… ({len(text) - chars:,} more characters not kept)"


def _within(value: Any, limit: int) -> Any:
    """`value` in at most about `limit` UTF-8 bytes (cut on a character), saying how much was not kept: a text, or
    what the model received block by block (`[{text, added}]`: each block's text gets an equal share)."""
    if isinstance(value, list):
        share = limit // max(len(value), 1)
        return [{**block, "text": _within(str(block.get("text", "")), share)} for block in value]
    if value is None:
        return None
    kept = results.cut(value, limit)
    return value if kept == value else kept + f"\n… ({len(value) - len(kept):,} more characters not kept)"


def encoded(call: dict[str, Any]) -> bytes:
    """The call as compact JSON of at most `ENTRY_BYTES`: over it, its notes cut to `NOTES` of `NOTE_CHARS` and
    its two texts to an equal share of the room left (halved while JSON escapes still overflow it)."""
    data = dumped(call)
    if len(data) <= ENTRY_BYTES:
        return data
    notes = [{**n, "text": cut(str(n.get("text", "")), NOTE_CHARS)} for n in call.get("gateway_text", [])[:NOTES]]
    call = {**call, "gateway_text": notes, "cut": True}
    share = (ENTRY_BYTES - len(dumped({**call, **dict.fromkeys(TEXTS)})) - 200) // len(TEXTS)
    while share > 64:
        data = dumped({**call, **{k: _within(call.get(k), share) for k in TEXTS}})
        if len(data) <= ENTRY_BYTES:
            return data
        share //= 2
    return dumped({**call, **dict.fromkeys(TEXTS)})
