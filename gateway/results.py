"""Tool results: the gateway's hints and how they are rendered, and how a result is read and measured; UTF-8
sizes and cuts of strings without encoding them whole (results can be 100 MB).

A leaf: every layer (fronts, middlewares, hosted tools, Think) builds and measures results the same way.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import mcp.types as types
from pydantic_core import to_json

_SLICE = 1024 * 1024


def utf8_len(text: str) -> int:
    """Bytes of `text` in UTF-8 (lone surrogates counted as 3, as surrogatepass writes them)."""
    if text.isascii():  # O(1): CPython keeps the flag
        return len(text)
    return sum(len(text[i : i + _SLICE].encode("utf-8", "surrogatepass")) for i in range(0, len(text), _SLICE))


def cut(text: str, size: int, *, from_end: bool = False) -> str:
    """At most `size` UTF-8 bytes of `text` from its start (or end), whole characters only."""
    if size <= 0:
        return ""
    # `size` characters hold at least `size` bytes, so a big string is never encoded just to keep a bit of it.
    part = text[-size:] if from_end else text[:size]
    data = part.encode("utf-8", "surrogatepass")
    data = data[-size:] if from_end else data[:size]
    return data.decode("utf-8", "ignore")  # drops only the partial character at the cut (and lone surrogates)


def utf8_slices(text: str) -> list[bytes]:
    """`text` encoded in 1 MiB pieces, for writing it out without a second whole copy."""
    return [text[i : i + _SLICE].encode("utf-8", "surrogatepass") for i in range(0, len(text), _SLICE)]


HINTS_META_KEY = "gateway/hints"
HINT_PREFIX = "[gateway] "
UNBUDGETED = frozenset({"bootstrap"})
"""Kinds whose size is set elsewhere (bootstrap.mode), so they never crowd out the others."""


@dataclass(slots=True, frozen=True)
class Hint:
    """Gateway-authored text for the model, appended after the result and never truncated."""

    kind: str
    text: str


def render_hints(result: types.CallToolResult, hints: Sequence[Hint], budget: int) -> types.CallToolResult:
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
    blocks = [types.TextContent(text=h.text if h.text.startswith(HINT_PREFIX) else HINT_PREFIX + h.text) for h in kept]
    meta = dict(result.meta or {})
    meta[HINTS_META_KEY] = [{"kind": h.kind, "text": h.text} for h in kept]
    return result.model_copy(update={"content": [*result.content, *blocks], "meta": meta})


def text_result(text: str, *, error: bool = False) -> types.CallToolResult:
    """A result of one text block."""
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error)


def text_view(result: types.CallToolResult) -> str:
    """What a reader pages through: text blocks as they are, other blocks as their JSON."""
    parts = [b.text if isinstance(b, types.TextContent) else b.model_dump_json(by_alias=True) for b in result.content]
    if not parts and result.structured_content is not None:
        parts.append(to_json(result.structured_content).decode())
    return "\n".join(parts)


def result_bytes(result: types.CallToolResult) -> int:
    """Serialized size of what the client would receive (content and structured content)."""
    size = sum(
        utf8_len(b.text) if isinstance(b, types.TextContent) else len(b.model_dump_json()) for b in result.content
    )
    if result.structured_content is not None:
        size += len(to_json(result.structured_content))
    return size


def result_view(result: types.CallToolResult) -> Any:
    """What a step records: structured content when the tool gives an object, else its text as {"text": ...}."""
    if isinstance(result.structured_content, dict):
        return result.structured_content
    return {"text": "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))}
