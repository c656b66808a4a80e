"""How one tool reads in a session's `tools/list`, and what that costs the client's window.

A listed tool carries the session's name for it and a description within the rule's cap; the gateway's own
tools also drop schema keywords only their server needs and speak of tools in the session's names. The
size of that definition, in characters of JSON, is what `auto` weighs and fills.
"""

import re
from collections.abc import Callable, Sequence
from typing import Any, cast

import mcp.types as types

from gateway.middleware.exposure.rules import Rule
from gateway.middleware.exposure.vocabulary import unvalued
from gateway.routing.catalog import Entry
from gateway.routing.rename import Names, reference

OWN_SERVERS = frozenset({"gateway", "think", "prompt"})
"""In-process servers: the gateway's and Think's own tools."""
ENTRY_POINTS = frozenset({"gateway.find_tools", "gateway.call_tool", "think.plan", "think.next"})
"""The own tools a client needs to start, listed in every mode (DESIGN §14): the rest (status, read_output,
think.explain, …) would take 5,000 chars of every client's window that most never use; the driver prompt
says how to reach them."""
WORKFLOWS_ENTRY = "think.workflows.list"
"""Listed with ENTRY_POINTS only while there are workflows to list."""
ALWAYS_LOAD = frozenset({"think.plan", "think.next"})
"""What a session needs from its first turn: a client that defers tools behind its own search (Claude Code) loads
these at once (`_meta["anthropic/alwaysLoad"]`); deferred, Think's entry points went unused in 4 of 6 sessions.
`gateway.read_output` joins them once the session had a result spilled (`READ_OUTPUT`)."""
READ_OUTPUT = "gateway.read_output"
ALWAYS_LOAD_KEY = "anthropic/alwaysLoad"
SEARCH_HINT_KEY = "anthropic/searchHint"
HINT_CHARS = 64
"""A search hint is a short phrase: the client's own search weighs it beside the name and description."""
HINT_STOPWORDS = frozenset(
    "a an and any are as at be by for from get gets given in into is it its of on or that the their this to "
    "use used using when which will with you your".split()
)
TOLD_CHARS = len(',"_meta":{"anthropic/maxResultSizeChars":1000000000}')
"""At most what the size guard adds to each tool listed to a TELLS_LIMIT client (`Rule.told`): `auto` counts it."""
CHECK_ONLY = frozenset({"pattern", "minLength", "maxLength"})
"""Schema keywords of the own tools that only the server needs: it checks them and names a failing value."""


def slim(schema: Any) -> Any:
    """An input schema without CHECK_ONLY keywords nor a default `additionalProperties` (an own tool's listed copy)."""
    if not isinstance(schema, dict):
        return schema
    # `additionalProperties: true` is JSON Schema's default: dropping it changes nothing but the size.
    out = {k: v for k, v in schema.items() if k not in CHECK_ONLY and not (k == "additionalProperties" and v is True)}
    if isinstance(out.get("properties"), dict):
        out["properties"] = {name: slim(sub) for name, sub in out["properties"].items()}
    if "items" in out:
        out["items"] = slim(out["items"])
    return out


def definition_chars(tool: types.Tool, rule: Rule | None = None) -> int:
    """What a listed tool costs the client's window: the characters of its JSON definition, and under a `rule` that
    tells the client its inline limits, at most what the size guard adds to it."""
    told = TOLD_CHARS if rule is not None and rule.told else 0
    return len(tool.model_dump_json(by_alias=True, exclude_none=True)) + told


def search_text(entry: Entry) -> str:
    """What a tool is searched by: its name and description (the seam where expansions join)."""
    tool = cast(types.Tool, entry.item)
    return f"{entry.exposed} {tool.description or ''}"


def search_hint(text: str) -> str:
    """A short phrase from a tool's search text for the client's own search: its first distinct words, stopwords
    and punctuation left out, within HINT_CHARS."""
    words: list[str] = []
    size = 0
    for raw in re.split(r"[^0-9A-Za-z]+", text.lower()):
        if len(raw) < 2 or raw in HINT_STOPWORDS or raw in words:
            continue
        if size + len(raw) + bool(words) > HINT_CHARS:
            break
        words.append(raw)
        size += len(raw) + (len(words) > 1)
    return " ".join(words)


def hints(entry: Entry, always: bool, expansions: Sequence[str] = ()) -> dict[str, Any]:
    """The `_meta` a natively searching client reads: a search hint on every tool, alwaysLoad on `always`. The
    hint starts with the tool's `expansions` (requests in users' words: the words its name and description lack),
    without their values (a request's example key `PROJ-5` is no word about the tool)."""
    asked = [unvalued(request) for request in expansions]
    meta: dict[str, Any] = {SEARCH_HINT_KEY: search_hint(" ".join([*asked, search_text(entry)]))}
    if always:
        meta[ALWAYS_LOAD_KEY] = True
    return meta


def as_listed(
    entry: Entry,
    names: Names,
    rule: Rule,
    mark: types.ToolExecution | None,
    *,
    spilled: bool = True,
    expansions: Callable[[Entry], Sequence[str]] | None = None,
) -> types.Tool:
    """A tool as listed under `rule`; a downstream's carries `mark` (`Session.task_mark`), the gateway's own
    (answered at once, in process) none. A client that searches natively (`rule.native`) also reads `hints` (with
    the tool's `expansions`); `spilled`: whether the session had a result spilled (then read_output is loaded at
    once; measured as if so)."""
    tool = cast(types.Tool, entry.item)  # catalog.tools holds tools
    update: dict[str, Any] = {"name": names.to_session(entry.exposed)}
    if rule.native:
        ref = reference(entry.server, entry.original)
        always = entry.server in OWN_SERVERS and (ref in ALWAYS_LOAD or (spilled and ref == READ_OUTPUT))
        more = () if expansions is None else expansions(entry)
        update["meta"] = {**(tool.meta or {}), **hints(entry, always, more)}
    description = tool.description or ""
    if entry.server in OWN_SERVERS:
        description = names.text(description)
        update["input_schema"] = slim(tool.input_schema)
    elif mark is not None:
        update["execution"] = mark
    cap = rule.description_chars
    if cap is not None and len(description) > cap:
        description = description[: cap - 1].rstrip() + "…"
    if description != (tool.description or ""):
        update["description"] = description
    return tool.model_copy(update=update)
