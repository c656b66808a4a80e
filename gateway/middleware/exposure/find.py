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
DEFAULT_LIMIT = 10
MAX_LIMIT = 50
ANSWER_CHARS = 1_500
"""A compact answer's text (up to 10 hits: name, gloss, required arguments) stays within this: it is read by a model
that has a call to make, not a catalog to study. `detail: true` answers within the inline size limit instead."""
GLOSS_WORDS = 8
QUOTED = 60
"""Characters of the query an answer quotes back (a query may be 1,000: the answer is for the hits)."""
ONE_LINE = 120
"""A hit's description in detail's text: its first sentence, cut here."""


class FindTools(Arguments):
    query: str | None = None
    # Out of range is clamped and said (not refused); the bounds go unadvertised: every listed character counts.
    limit: int = DEFAULT_LIMIT
    server: str | None = None
    detail: bool | None = None
    """Unset: false (no advertised default, for the same reason)."""


class CallTool(Arguments):
    name: Annotated[str, Field(min_length=1)]
    arguments: dict[str, Any] | None = None


FIND_TOOLS = tool(
    "find_tools",
    'Find tools: one query per step, in a tool\'s own words ("create merge request"), not the whole task. server '
    "alone lists its tools; detail adds schemas.",
    FindTools,
)
CALL_TOOL = tool("call_tool", "Call a tool by exact name, listed or not.", CallTool)


class BadArguments(ValueError):
    """Arguments a hosted tool cannot use; the message says what was wrong and what to send."""


@dataclass(slots=True)
class FindRequest:
    query: str | None
    """None: browse `server` (list its tools' names)."""
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
    if query is None and parsed.server is None:
        raise BadArguments(
            'find_tools needs a `query` (what the tool does, e.g. {"query": "list open merge requests"}) or a `server` '
            f"to list its tools; servers: {', '.join(sorted(servers))}."
        )
    if query is not None and not query.strip():
        raise BadArguments(
            f"find_tools needs a non-empty `query` string (got {query!r}): describe the task in a few words, "
            'e.g. {"query": "list open merge requests"}.'
        )
    if query is not None and len(query) > MAX_QUERY_CHARS:
        raise BadArguments(
            f"The query is {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,}. "
            "Send a few keywords describing the task, not a document."
        )
    server = parsed.server
    if server is not None and server not in servers:
        raise BadArguments(
            f"Unknown server {server!r}; servers: {', '.join(sorted(servers))}. Omit `server` to search all."
        )
    request = FindRequest(query, DEFAULT_LIMIT, server, bool(parsed.detail))
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


def gloss(description: str) -> str:
    """What a tool does in at most GLOSS_WORDS words: the start of its first sentence."""
    words = one_line(description).rstrip(".…").split()
    return " ".join(words[:GLOSS_WORDS]) + ("…" if len(words) > GLOSS_WORDS else "")


def _hit(hit: Hit, name: str, detail: bool) -> dict[str, Any]:
    description = hit.tool.description or ""
    found: dict[str, Any] = {"name": name, "gloss": gloss(description), "required": _required(hit.tool)}
    if detail:
        found.update(server=hit.server, description=description, inputSchema=hit.tool.input_schema)
    return found


def _line(rank: int, hit: dict[str, Any]) -> str:
    needs = f" ({', '.join(hit['required'])})" if hit["required"] else ""
    return f"{rank}. {hit['name']}{needs}: {hit['gloss']}"


def _good(hit: Hit, terms: list[str]) -> bool:
    """Whether a hit shares a word (its first 4 letters) with the query: else the ranker only guessed."""
    text = f"{hit.name} {hit.tool.description or ''}".lower()
    return any(term[:4].lower() in text for term in terms)


def answer(
    request: FindRequest, matches: Matches, session_name: Callable[[str], str], budget_bytes: int
) -> types.CallToolResult:
    """Structured `{tools, total}` plus a compact text: without `detail` the text stays within ANSWER_CHARS, with it
    the answer within `budget_bytes`; hits that do not fit are counted. After a miss (no hit shares a word with the
    query) the server with the most hits is offered for browsing."""
    hits: list[dict[str, Any]] = []
    notes = list(request.notes)
    lines: list[str] = []
    for hit in matches.hits:
        found = _hit(hit, session_name(hit.name), request.detail)
        line = _line(len(hits) + 1, found)
        if request.detail:
            over = hits and 2 * (len(to_json(hits)) + len(to_json(found)) + len(line)) + 600 > budget_bytes
        else:
            over = hits and sum(len(x) + 1 for x in lines) + len(line) + 300 > ANSWER_CHARS
        if over:
            notes.append(f"{len(matches.hits) - len(hits)} more left out; ask narrower, or a smaller limit.")
            break
        hits.append(found)
        lines.append(line)
    body: dict[str, Any] = {"tools": hits, "total": matches.total}
    missed = not any(_good(h, matches.terms) for h in matches.hits)
    if missed and matches.hits:
        servers = [h.server for h in matches.hits]
        best = max(dict.fromkeys(servers), key=servers.count)
        body["browse"] = best
        notes.append(f'No close match. Browse {best}\'s tools: find_tools {{"server": "{best}"}}; or other words.')
    if notes:
        body["notes"] = notes
    asked = repr(request.query if len(request.query or "") <= QUOTED else f"{(request.query or '')[:QUOTED]}…")
    if not hits:
        text = (
            f"No tool matches {asked}"
            + (f" on server {request.server!r}" if request.server else "")
            + '. Try the words a tool would use (the action and the object), or find_tools {"server": ...} '
            "to list a server's tools."
        )
    else:
        head = f"{len(hits)} of {matches.total} for {asked} (name (required): what it does):"
        text = "\n".join([head, *lines, "Call one by exact name, or via gateway.call_tool {name, arguments}."])
    if notes:
        text += "\n" + "\n".join(notes)
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=body)


def browse(server: str, names: list[str], budget_bytes: int) -> types.CallToolResult:
    """`find_tools {server}`: that server's tool names (in the session's names), within `budget_bytes`."""
    shown: list[str] = []
    size = 600  # the frames of the text and of the structured answer
    for name in names:
        if size + 2 * len(name) + 5 > budget_bytes:  # the name in the text (", ") and in the structured list
            break
        shown.append(name)
        size += 2 * len(name) + 5
    more = f" (and {len(names) - len(shown)} more)" if len(shown) < len(names) else ""
    text = (
        f"{len(names):,} tools on {server}{more}: {', '.join(shown)}. "
        f'find_tools {{"query": ..., "server": "{server}"}} gives what each needs.'
    )
    body = {"server": server, "tools": shown, "total": len(names)}
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=body)


def _required(tool: types.Tool) -> list[str]:
    """The names of a tool's required arguments (a hit's one line says what to send)."""
    req = tool.input_schema.get("required") if isinstance(tool.input_schema, dict) else None
    return [str(r) for r in req] if isinstance(req, list) else []
