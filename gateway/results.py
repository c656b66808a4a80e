"""Tool results: the gateway's hints and how they are rendered, and how a result is read and measured; UTF-8
sizes and cuts of strings without encoding them whole (results can be 100 MB).

A leaf: every layer (fronts, middlewares, hosted tools, Think) builds and measures results the same way.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import mcp.types as types
from pydantic_core import from_json, to_json

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
_JSON_START = re.compile(r"\s*[\[{]")
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


def _carries(block: types.ContentBlock, structured: Any) -> bool:
    """Whether a text block is the structured content serialized, as the spec advises a tool with structured
    output to send it (any JSON layout; parsed only when it can be JSON at all)."""
    if not isinstance(block, types.TextContent) or not _JSON_START.match(block.text):
        return False
    try:
        return bool(from_json(block.text) == structured)
    except ValueError:
        return False


def _parts(result: types.CallToolResult) -> list[str | bytes]:
    """What a reader of the result reads, each thing once: text blocks as they are, other blocks as their JSON,
    then the structured content's JSON unless a text block already carries it."""
    parts: list[str | bytes] = [
        b.text if isinstance(b, types.TextContent) else b.model_dump_json(by_alias=True) for b in result.content
    ]
    structured = result.structured_content
    if structured is not None and not any(_carries(b, structured) for b in result.content):
        parts.append(to_json(structured))
    return parts


def text_view(result: types.CallToolResult) -> str:
    """What a reader pages through: `_parts` one per line."""
    return "\n".join(p if isinstance(p, str) else p.decode() for p in _parts(result))


def result_bytes(result: types.CallToolResult) -> int:
    """What the client reads, in UTF-8 bytes, the duplicate of structured content counted once: exactly the size
    of `text_view`, measured without joining it (results can be 100 MB)."""
    parts = _parts(result)
    total = max(len(parts) - 1, 0)  # the newlines between them
    for part in parts:  # a loop, not sum() over a generator: the size guard measures every result
        total += utf8_len(part) if isinstance(part, str) else len(part)
    return total


def result_view(result: types.CallToolResult) -> Any:
    """What a step records: structured content when the tool gives an object, else its text as {"text": ...}."""
    if isinstance(result.structured_content, dict):
        return result.structured_content
    return {"text": "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))}
