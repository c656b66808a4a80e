"""`gateway.find_tools` and `gateway.call_tool`: their definitions, argument checks and the search answer.

Both are answered by the exposure middleware (they need the caller's session: its names, its list, its
policy); the hosted server only lists them. A search answer stays under the inline size limit: hits are
added while the answer fits, and it says how many were left out.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar

import mcp.types as types
from pydantic import Field
from pydantic_core import to_json

from gateway.hosted.contracts import Arguments, ArgumentsError, parse, tool
from gateway.middleware.exposure.search import MAX_QUERY_CHARS, Hit, Matches

A = TypeVar("A", bound=Arguments)
DEFAULT_LIMIT = 5
MAX_LIMIT = 50
ONE_LINE = 120
"""A hit's description without `detail`: its first sentence, cut here, so 5 hits answer in about 1,000 chars
(the issue's bound: 1,500) and the window keeps room for the call itself."""


class FindTools(Arguments):
    query: Annotated[str, Field(description="The task in a few words.")]
    # Out of range is clamped and said (not refused): the bounds are advertised, not enforced by the model.
    limit: Annotated[int, Field(json_schema_extra={"minimum": 1, "maximum": MAX_LIMIT})] = DEFAULT_LIMIT
    server: Annotated[str | None, Field(description="Only this server's tools.")] = None
    detail: bool = False


class CallTool(Arguments):
    name: Annotated[str, Field(min_length=1)]
    arguments: dict[str, Any] | None = None


FIND_TOOLS = tool(
    "find_tools",
    "Find any tool behind this gateway, listed or not, by what you want to do: the best matches, best "
    "first. detail: true adds their input schemas. Then call one by its exact name.",
    FindTools,
)
CALL_TOOL = tool(
    "call_tool",
    "Call any tool by its exact name, listed or not, as a direct call would. For clients that only call listed tools.",
    CallTool,
)


class BadArguments(ValueError):
    """Arguments a hosted tool cannot use; the message says what was wrong and what to send."""


HOW_TO_CALL = (
    "Call one by its exact name. If your client calls only the tools in its own list and it is not there, call it "
    'through gateway.call_tool {"name": <name>, "arguments": {...}}.'
)
"""Clients that call only listed tools (most IDE agents) cannot reach a found one by name."""


@dataclass(slots=True)
class FindRequest:
    query: str
    limit: int
    server: str | None
    detail: bool
    notes: list[str] = field(default_factory=list[str])
    """Clamps applied, said in the answer."""


def checked(tool: str, model: type[A], args: Any) -> A:
    """The arguments against the tool's declared schema (`gateway.hosted.contracts`), as every hosted tool's are."""
    try:
        return parse(f"gateway.{tool}", model, args if isinstance(args, dict) else None)  # the SDK: dict or None
    except ArgumentsError as exc:
        raise BadArguments(exc.text()) from None


def find_request(args: Any, servers: set[str]) -> FindRequest:
    """Check find_tools arguments: a bad query or server is an error, an out-of-range limit is clamped."""
    parsed = checked(FIND_TOOLS.name, FindTools, args)
    query = parsed.query
    if not query.strip():
        raise BadArguments(
            f"find_tools needs a non-empty `query` string (got {query!r}): describe the task in a few words, "
            'e.g. {"query": "list open merge requests"}.'
        )
    if len(query) > MAX_QUERY_CHARS:
        raise BadArguments(
            f"The query is {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,}. "
            "Send a few keywords describing the task, not a document."
        )
    server = parsed.server
    if server is not None and server not in servers:
        raise BadArguments(
            f"Unknown server {server!r}; servers: {', '.join(sorted(servers))}. Omit `server` to search all."
        )
    request = FindRequest(query, DEFAULT_LIMIT, server, parsed.detail)
    limit = parsed.limit
    if not 1 <= limit <= MAX_LIMIT:
        request.limit = min(max(limit, 1), MAX_LIMIT)
        request.notes.append(f"limit {limit:,} is outside 1-{MAX_LIMIT}; used {request.limit}.")
    else:
        request.limit = limit
    return request


def call_request(args: Any) -> tuple[str, dict[str, Any], list[str]]:
    """(name, arguments, notes) of a call_tool call; a missing `arguments` means {} and is said."""
    parsed = checked(CALL_TOOL.name, CallTool, args)
    if parsed.arguments is None:
        return parsed.name, {}, [f"call_tool got no `arguments`; {parsed.name} was called with {{}}."]
    return parsed.name, parsed.arguments, []


def one_line(description: str) -> str:
    """The first sentence of the first non-empty line, at most ONE_LINE chars."""
    line = next((part.strip() for part in description.splitlines() if part.strip()), "")
    end = line.find(". ")
    line = line[: end + 1] if end >= 0 else line
    return line if len(line) <= ONE_LINE else line[: ONE_LINE - 1].rstrip() + "…"


def _hit(hit: Hit, name: str, detail: bool) -> dict[str, Any]:
    description = hit.tool.description or ""
    if not detail:
        description = one_line(description)
    found: dict[str, Any] = {
        "name": name,
        "server": hit.server,
        "description": description,
        "required": _required(hit.tool),
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
        text = "\n".join([head, *(_line(i, h) for i, h in enumerate(hits, 1)), HOW_TO_CALL])
    if notes:
        text += "\n" + "\n".join(f"Note: {n}" for n in notes)
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=body)


def _required(tool: types.Tool) -> list[str]:
    """The names of a tool's required arguments (a hit's one line says what to send)."""
    req = tool.input_schema.get("required") if isinstance(tool.input_schema, dict) else None
    return [str(r) for r in req] if isinstance(req, list) else []
