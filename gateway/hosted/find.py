"""`gateway.find_tools` and `gateway.call_tool`: their definitions, argument checks and the search answer.

Both are answered by the exposure middleware (they need the caller's session: its names, its list, its
policy); the hosted server only lists them. A search answer stays under the inline size limit: hits are
added while the answer fits, and it says how many were left out.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import mcp.types as types
from pydantic_core import to_json

from gateway.catalog.search import MAX_QUERY_CHARS, Hit, Matches, required

DEFAULT_LIMIT = 5
MAX_LIMIT = 50
SHORT_DESCRIPTION = 200

FIND_TOOLS = types.Tool(
    name="find_tools",
    description=(
        "Search every tool behind this gateway, listed or not, by what you want to do. Returns the best "
        "matches {name, server, description, required, score}; detail: true adds each inputSchema. Then call "
        "a match by its exact name (or through gateway.call_tool)."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "The task in a few words, e.g. 'merge request comments'."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
            "server": {"type": "string", "description": "Only this server's tools, e.g. 'gitlab'."},
            "detail": {"type": "boolean", "default": False, "description": "Include each input schema."},
        },
        "required": ["query"],
    },
)
CALL_TOOL = types.Tool(
    name="call_tool",
    description=(
        "Call any tool behind this gateway by its exact name, listed or not, exactly as a direct call "
        "(same checks, hints and size limits). Find names with gateway.find_tools."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Exact tool name from gateway.find_tools."},
            "arguments": {"type": "object", "description": "The tool's arguments, per its inputSchema."},
        },
        "required": ["name"],
    },
)


class BadArguments(ValueError):
    """Arguments a hosted tool cannot use; the message says what was wrong and what to send."""


@dataclass(slots=True)
class FindRequest:
    query: str
    limit: int
    server: str | None
    detail: bool
    notes: list[str] = field(default_factory=list[str])
    """Clamps applied, said in the answer."""


def find_request(args: dict[str, Any], servers: set[str]) -> FindRequest:
    """Check find_tools arguments: a bad query or server is an error, an out-of-range limit is clamped."""
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        raise BadArguments(
            f"find_tools needs a non-empty `query` string (got {query!r}): describe the task in a few words, "
            'e.g. {"query": "list open merge requests"}.'
        )
    if len(query) > MAX_QUERY_CHARS:
        raise BadArguments(
            f"The query is {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,}. "
            "Send a few keywords describing the task, not a document."
        )
    server = args.get("server")
    if server is not None and (not isinstance(server, str) or server not in servers):
        raise BadArguments(
            f"Unknown server {server!r}; servers: {', '.join(sorted(servers))}. Omit `server` to search all."
        )
    detail = args.get("detail", False)
    if not isinstance(detail, bool):
        raise BadArguments(f"`detail` must be true or false, got {detail!r}.")
    request = FindRequest(query, DEFAULT_LIMIT, server, detail)
    limit = args.get("limit", DEFAULT_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int):
        request.notes.append(f"limit {limit!r} is not an integer; used {DEFAULT_LIMIT}.")
    elif not 1 <= limit <= MAX_LIMIT:
        request.limit = min(max(limit, 1), MAX_LIMIT)
        request.notes.append(f"limit {limit:,} is outside 1-{MAX_LIMIT}; used {request.limit}.")
    else:
        request.limit = limit
    return request


def call_request(args: dict[str, Any]) -> tuple[str, dict[str, Any], list[str]]:
    """(name, arguments, notes) of a call_tool call; a missing `arguments` means {} and is said."""
    name = args.get("name")
    if not isinstance(name, str) or not name:
        raise BadArguments(
            f"call_tool needs `name`, the exact tool name (got {name!r}); find it with gateway.find_tools."
        )
    if "arguments" not in args or args["arguments"] is None:
        return name, {}, [f"call_tool got no `arguments`; {name} was called with {{}}."]
    arguments = args["arguments"]
    if not isinstance(arguments, dict):
        raise BadArguments(
            f"call_tool `arguments` must be a JSON object of {name}'s parameters, got {type(arguments).__name__} "
            f'{str(arguments)[:80]!r}. Send {{"name": "{name}", "arguments": {{...}}}}.'
        )
    return name, arguments, []


def _hit(hit: Hit, name: str, detail: bool) -> dict[str, Any]:
    description = hit.tool.description or ""
    if not detail and len(description) > SHORT_DESCRIPTION:
        description = description[: SHORT_DESCRIPTION - 1].rstrip() + "…"
    found: dict[str, Any] = {
        "name": name,
        "server": hit.server,
        "description": description,
        "required": required(hit.tool),
        "score": hit.score,
    }
    if detail:
        found["inputSchema"] = hit.tool.input_schema
    return found


def _line(rank: int, hit: dict[str, Any]) -> str:
    first = hit["description"].split("\n", 1)[0]
    needs = f" Required: {', '.join(hit['required'])}." if hit["required"] else ""
    return f"{rank}. {hit['name']} — {first}{needs}"


def answer(
    request: FindRequest, matches: Matches, session_name: Callable[[str], str], budget_bytes: int
) -> types.CallToolResult:
    """Structured `{tools, total}` plus a compact text, within `budget_bytes` (hits that do not fit are counted)."""
    hits: list[dict[str, Any]] = []
    notes = list(request.notes)
    for hit in matches.hits:
        found = _hit(hit, session_name(hit.name), request.detail)
        size = len(to_json(hits)) + len(to_json(found)) + len(_line(len(hits) + 1, found))
        if hits and 2 * size + 600 > budget_bytes:  # structured + text ≈ twice the hits; the rest is the frame
            notes.append(
                f"{len(matches.hits) - len(hits)} more hits left out to keep this answer under {budget_bytes:,} "
                "bytes; ask with a smaller limit, a narrower query or detail: false."
            )
            break
        hits.append(found)
    body: dict[str, Any] = {"tools": hits, "total": matches.total}
    if notes:
        body["notes"] = notes
    if not hits:
        text = (
            f"No tool matches {request.query!r}"
            + (f" on server {request.server!r}" if request.server else "")
            + ". Try other words (what the tool does, the object it acts on), or drop `server`."
        )
    else:
        head = f"{len(hits)} of {matches.total} tools matching {request.query!r}, best first:"
        text = "\n".join([head, *(_line(i, h) for i, h in enumerate(hits, 1))])
    if notes:
        text += "\n" + "\n".join(f"Note: {n}" for n in notes)
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=body)
