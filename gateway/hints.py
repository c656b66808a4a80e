"""Render `call.hints` into a tool result: `[gateway]` text blocks at the end, mirrored in `_meta`, within a budget."""

from collections.abc import Sequence

import mcp.types as types

from gateway.pipeline import Hint

META_KEY = "gateway/hints"
PREFIX = "[gateway] "
UNBUDGETED = frozenset({"bootstrap"})
"""Kinds whose size is set elsewhere (bootstrap.mode), so they never crowd out the others."""


def render(result: types.CallToolResult, hints: Sequence[Hint], budget: int) -> types.CallToolResult:
    """Append the hints that fit in `budget` characters (in order); say how many were left out."""
    if not hints:
        return result
    kept: list[Hint] = []
    used = 0
    dropped = 0
    for hint in hints:
        if hint.kind in UNBUDGETED:
            kept.append(hint)
        elif used + len(hint.text) <= budget:
            kept.append(hint)
            used += len(hint.text)
        else:
            dropped += 1
    if dropped:
        kept.append(Hint("budget", f"{dropped} more gateway hints left out (hint budget {budget:,} chars)."))
    blocks = [types.TextContent(text=h.text if h.text.startswith(PREFIX) else PREFIX + h.text) for h in kept]
    meta = dict(result.meta or {})
    meta[META_KEY] = [{"kind": h.kind, "text": h.text} for h in kept]
    return result.model_copy(update={"content": [*result.content, *blocks], "meta": meta})
