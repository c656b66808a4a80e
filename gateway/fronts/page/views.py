"""What each tab of the page shows, as plain data for its template: worked out when someone looks, from the
running gateway's own state (registry status, catalog, exposure, policy, the recorder, the Think library).

Argument values, tokens and secrets are never part of it (as in the audit log): a call shows its tool,
identity, outcome, sizes and results, never what it was called with.
"""

import time
from dataclasses import dataclass
from typing import Any

import mcp.types as types

from gateway.fronts.page.observed import Observed
from gateway.middleware.exposure.view import OWN_SERVERS, definition_chars
from gateway.middleware.policy import Subject
from gateway.middleware.record import Recorded, Recorder
from gateway.results import HINTS_META_KEY, render_hints
from gateway.session import Identity, Session

TEXT_SHOWN = 20_000
"""Characters of a result shown on the page (the rest is said to be cut)."""


@dataclass(frozen=True, slots=True)
class Viewer:
    identity: Identity
    admin: bool
    """May change state, and sees every identity's calls (others see their own)."""


def servers(gateway: Observed) -> list[dict[str, Any]]:
    return [{"name": name, **status} for name, status in sorted(gateway.registry.status().items())]


def identities(gateway: Observed, viewer: Viewer) -> list[Identity]:
    """Whose listing the catalog shows: the viewer, and for an admin every configured static token's identity."""
    shown = [viewer.identity]
    if viewer.admin:
        for token in gateway.config.auth.tokens:
            who = Identity(token.name, "static", token.name, groups=frozenset(token.groups))
            if who.key != viewer.identity.key:
                shown.append(who)
    return shown


async def catalog(gateway: Observed, viewer: Viewer, query: str = "") -> dict[str, Any]:
    """Every tool with its size, and per identity whether it is listed or the policy rule that hides it; per
    exposure rule what a client under it is listed (all tools, or the pinned ones plus what find_tools finds);
    with a `query`, find_tools' ranking of it as the viewer would get it."""
    catalog = await gateway.registry.catalog()
    exposure, who = gateway.exposure, identities(gateway, viewer)
    found: dict[str, Any] | None = None
    if query:
        try:
            matches = exposure.search(catalog, Session(f"page:{viewer.identity.key}", viewer.identity), query, limit=10)
        except ValueError as exc:  # over the query length limit: said, as find_tools says it
            found = {"query": query, "error": str(exc), "hits": [], "total": 0, "terms": []}
        else:
            hits = [{"name": h.name, "server": h.server, "score": round(h.score, 3)} for h in matches.hits]
            found = {"query": query, "error": None, "hits": hits, "total": matches.total, "terms": matches.terms}
    rules = []
    for rule in exposure.rules():
        tools, chars = exposure.full_size(catalog, rule)
        searching = exposure.searching(catalog, rule)
        rules.append(
            {
                "client": rule.client_glob or "(default)",
                "mode": rule.mode,
                "searching": searching,
                "tools": tools,
                "chars": chars,
                "tokens": chars // 4,
            }
        )
    searching_any = any(r["searching"] for r in rules)
    rows = []
    for entry in catalog.tools.values():
        if not isinstance(entry.item, types.Tool):
            continue
        per: list[str] = []
        for identity in who:
            denied = gateway.policy.denial(identity, Subject.of(entry))
            per.append("listed" if denied is None else f"hidden: {denied}")
        rows.append(
            {
                "name": entry.exposed,
                "server": entry.server,
                "chars": definition_chars(entry.item),
                "found_only": searching_any and entry.server not in OWN_SERVERS and not exposure.pinned(entry),
                "per": per,
            }
        )
    return {"rules": rules, "identities": [i.name for i in who], "tools": rows, "found": found, "query": query}


def _visible(recorded: Recorded, viewer: Viewer) -> bool:
    return viewer.admin or recorded.identity.key == viewer.identity.key


def calls(recorder: Recorder, viewer: Viewer) -> list[dict[str, Any]]:
    """Newest first: the calls the viewer may see (an admin: all)."""
    now = time.perf_counter()
    return [_row(r, now) for r in reversed(recorder.recent) if _visible(r, viewer)]


def _row(recorded: Recorded, now: float) -> dict[str, Any]:
    return {
        "number": recorded.number,
        "ago_s": round(now - recorded.ended, 1),
        "identity": recorded.identity.name,
        "tool": recorded.tool,
        "server": recorded.server,
        "outcome": recorded.outcome,
        "ms": round(recorded.seconds * 1000, 1),
        "request_bytes": recorded.request_bytes,
        "response_bytes": recorded.response_bytes,
        "spilled": recorded.spilled,
        "hints": [hint.kind for hint in recorded.hints],
        "trace_id": recorded.trace_id,
    }


def figures(recorder: Recorder, viewer: Viewer, window_s: float = 3600.0) -> dict[str, Any]:
    """Per server and per tool over the last `window_s` of the recent calls the viewer may see: calls, calls/s,
    errors, p50 and p99 (nearest rank). From the bounded buffer: exact for what it holds, says when it holds less."""
    now = time.perf_counter()
    recent = [r for r in recorder.recent if now - r.ended <= window_s and _visible(r, viewer)]
    span = max(1.0, now - recent[0].ended) if recent else 1.0
    groups: dict[tuple[str, str], list[Recorded]] = {}
    for r in recent:
        groups.setdefault(("server", r.server or "gateway"), []).append(r)
        groups.setdefault(("tool", r.tool), []).append(r)
    rows = []
    for (kind, name), members in sorted(groups.items()):
        ms = sorted(m.seconds * 1000 for m in members)
        rows.append(
            {
                "kind": kind,
                "name": name,
                "calls": len(ms),
                "rate": round(len(ms) / span, 3),
                "errors": sum(1 for m in members if m.outcome != "ok"),
                "p50": round(_rank(ms, 0.50), 1),
                "p99": round(_rank(ms, 0.99), 1),
            }
        )
    full = len(recorder.recent) >= recorder.max_calls or recorder.held >= recorder.max_bytes
    return {"rows": rows, "window_s": window_s, "span_s": round(span), "partial": full}


def _rank(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def call(recorder: Recorder, number: int, viewer: Viewer, hint_budget: int) -> dict[str, Any] | None:
    """One call: the server's result beside what the client received (hints rendered as the front renders them)."""
    recorded = recorder.find(number)
    if recorded is None or not _visible(recorded, viewer):
        return None
    row = _row(recorded, time.perf_counter())
    c = recorded
    received = c.result
    if received is not None:
        received = render_hints(received, c.hints, hint_budget)
    original = c.downstream if isinstance(c.downstream, types.CallToolResult) else None
    gateway_text = (received.meta or {}).get(HINTS_META_KEY, []) if received is not None else []
    return {
        **row,
        "error": None if c.error is None else str(c.error),
        "before": None if original is None else _text(original),
        "before_note": _before_note(c, original),
        "after": None if received is None else _text(received),
        "gateway_text": gateway_text,
    }


def _before_note(c: Recorded, original: types.CallToolResult | None) -> str:
    if c.spilled is not None:
        return f"Spilled whole to the output store as {c.spilled}; the client got a preview and how to read it."
    if original is None:
        return "Answered by the gateway itself: nothing was forwarded." if c.error is None else "Refused: not sent."
    return "As the server answered it."


def _text(result: types.CallToolResult) -> str:
    parts = [
        block.text if isinstance(block, types.TextContent) else f"[{block.type} block]" for block in result.content
    ]
    if result.structured_content is not None and not parts:
        parts.append(str(result.structured_content))
    text = "\n\n".join(parts)
    return text if len(text) <= TEXT_SHOWN else text[:TEXT_SHOWN] + f"\n… ({len(text) - TEXT_SHOWN:,} more characters)"
