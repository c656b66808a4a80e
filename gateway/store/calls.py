"""What both call-log backends share (the vocabulary of `gateway.store.base.CallLog`): the bounds, and how a
call is cut to fit them."""

import json
from typing import Any

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


def encoded(call: dict[str, Any]) -> bytes:
    """The call as compact JSON of at most `ENTRY_BYTES`: over it, its notes cut to `NOTES` of `NOTE_CHARS`, then
    its longest text shortened by as many characters as the JSON is bytes over (a character is a byte or more,
    so each pass fits or leaves the other text to cut); texts dropped if that is not enough."""
    data = dumped(call)
    if len(data) <= ENTRY_BYTES:
        return data
    notes = [{**n, "text": cut(str(n.get("text", "")), NOTE_CHARS)} for n in call.get("gateway_text", [])[:NOTES]]
    call = {**call, "gateway_text": notes, "cut": True}
    for _ in range(len(TEXTS) + 1):
        data = dumped(call)
        over = len(data) - ENTRY_BYTES
        if over <= 0:
            return data
        longest = max(TEXTS, key=lambda k: len(call.get(k) or ""))
        text = call.get(longest) or ""
        call[longest] = cut(text, max(0, len(text) - over - 64))
    return dumped({**call, **dict.fromkeys(TEXTS)})
