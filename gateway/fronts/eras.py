"""What leaves the gateway, shaped for the protocol version the client negotiated.

The SDK serializes every handshake-era version (2024-11-05 … 2025-11-25) with the 2025-11-25 surface, so
a result carries whatever that version has: a `resource_link` block (the spill notice), structured
content, titles, icons. Strict clients of older versions reject the whole result for one block they do
not know (the TypeScript SDK 1.12 and the Python SDK 1.9 at 2025-03-26). Here each model is walked once:
a field its class gained after the client's version is dropped, a content block whose type the version
lacks becomes a text block that says what it was, and structured content a version lacks is kept as
JSON text when the content does not already carry text. 2025-11-25 and the 2026 era pass untouched
(the SDK's own per-version surface handles the 2026 era).

The table below was read off the published schemas (`schema/<version>/schema.json` in
modelcontextprotocol/modelcontextprotocol): for each definition the gateway sends, the wire fields it
gained after 2024-11-05 and the version that added them.
"""

import json
from typing import Any, TypeVar

import mcp.types as types
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from gateway.results import HINT_PREFIX
from gateway.sdk import ProgressFn

T = TypeVar("T")

V0326, V0618, V1125 = "2025-03-26", "2025-06-18", "2025-11-25"
_META = {"_meta": V0618}
_LISTED = {"title": V0618, "_meta": V0618, "icons": V1125}

ADDED: dict[str, dict[str, str]] = {
    "Tool": {"annotations": V0326, "outputSchema": V0618, "execution": V1125, **_LISTED},
    "Resource": _LISTED,
    "ResourceTemplate": _LISTED,
    "Prompt": _LISTED,
    "PromptArgument": {"title": V0618},
    "TextContent": _META,
    "ImageContent": _META,
    "AudioContent": _META,
    "EmbeddedResource": _META,
    "TextResourceContents": _META,
    "BlobResourceContents": _META,
    "ResourceLink": {"icons": V1125},
    "Annotations": {"lastModified": V0618},
    "CallToolResult": {"structuredContent": V0618},
    "ProgressNotificationParams": {"message": V0326},
}
"""Per class name, the wire fields added after 2024-11-05 and the version that added each."""

BLOCKS: dict[type[BaseModel], str] = {types.AudioContent: V0326, types.ResourceLink: V0618}
"""Content block types added after 2024-11-05, and the version that added each."""

_RANK = {version: i for i, version in enumerate(KNOWN_PROTOCOL_VERSIONS)}
_CURRENT = _RANK[V1125]


def adapted(value: T, version: str | None) -> T:
    """`value` (a result or notification params) as `version` defines it; the same object when nothing changes.

    An unknown or missing version, or no model (a call that failed), is left alone: the SDK negotiates only
    known versions."""
    rank = _RANK.get(version or "")
    if rank is None or rank >= _CURRENT or not isinstance(value, BaseModel):
        return value
    shaped: T = _model(value, rank)
    return shaped


def older(version: str | None, since: str) -> bool:
    """Whether the negotiated `version` predates `since` (unknown versions are taken as current)."""
    rank = _RANK.get(version or "")
    return rank is not None and rank < _RANK[since]


def progress(report: ProgressFn, version: str | None) -> ProgressFn:
    """Progress relayed as `version` defines it: 2024-11-05 progress has no message."""
    if not older(version, V0326):
        return report

    async def unworded(progress: float, total: float | None = None, message: str | None = None) -> None:
        await report(progress, total, None)

    return unworded


def _walk(value: Any, rank: int) -> Any:
    if isinstance(value, BaseModel):
        return _model(value, rank)
    if isinstance(value, list) and value and isinstance(value[0], BaseModel):
        items = [_walk(item, rank) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value  # plain data (arguments, schemas, structured content) is the server's, not the protocol's


def _model(model: Any, rank: int) -> Any:
    since = BLOCKS.get(type(model))
    if since is not None and rank < _RANK[since]:
        return types.TextContent(text=as_text(model, KNOWN_PROTOCOL_VERSIONS[rank]))
    added = ADDED.get(type(model).__name__, {})
    update: dict[str, Any] = {}
    for name, field in type(model).model_fields.items():
        value = getattr(model, name)
        if value is None:
            continue
        introduced = added.get(field.alias or name)
        if introduced is not None and rank < _RANK[introduced]:
            update[name] = None
            continue
        walked = _walk(value, rank)
        if walked is not value:
            update[name] = walked
    if (
        isinstance(model, types.CallToolResult)
        and model.structured_content is not None
        and "structured_content" in update
    ):
        update["content"] = _with_json(model.content, update.get("content", model.content), model.structured_content)
    return model.model_copy(update=update) if update else model


def _with_json(sent: list[Any], content: list[Any], structured: dict[str, Any]) -> list[Any]:
    """`content` (the adapted `sent`), plus the structured content as JSON text when no text block the tool
    sent carries it (the spec asks tools to send the same JSON as text; the gateway's hints do not count)."""
    if any(isinstance(b, types.TextContent) and not b.text.startswith(HINT_PREFIX) for b in sent):
        return content
    return [types.TextContent(text=json.dumps(structured, ensure_ascii=False)), *content]


def as_text(block: BaseModel, version: str) -> str:
    """A content block `version` has no type for, told in words (what it was, and how to get at it)."""
    if isinstance(block, types.ResourceLink):
        facts = ", ".join(
            part
            for part in (
                block.mime_type,
                None if block.size is None else f"{block.size:,} bytes",
                block.title,
            )
            if part
        )
        about = f" {block.description}." if block.description else ""
        return (
            f"Resource {block.uri} ({block.name}{', ' + facts if facts else ''}).{about} Read it with resources/read."
        )
    if isinstance(block, types.AudioContent):
        size = len(block.data) * 3 // 4 - block.data[-2:].count("=")  # the decoded size: base64 padding is none of it
        return (
            f"[{block.mime_type} audio, {size:,} bytes, not shown: protocol {version} has no "
            "audio content; a client on 2025-03-26 or later receives it]"
        )
    raise TypeError(f"no text form for {type(block).__name__}")  # a bug: BLOCKS names a type not handled here
