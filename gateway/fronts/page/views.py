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
from gateway.middleware.exposure.listed import OWN_SERVERS, definition_chars
from gateway.middleware.policy import Subject
from gateway.session import Identity, Session


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
    for _label, rule in exposure.ways():
        tools, chars = exposure.full_size(catalog, rule)
        searching = exposure.searching(catalog, rule)
        rules.append(
            {
                "client": ", ".join(exposure.config.native_search)
                if rule.native and not rule.client_glob
                else rule.client_glob or "(default)",
                "mode": f"{rule.mode} + search hints" if rule.native else rule.mode,
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


def owners(viewer: Viewer) -> frozenset[str] | None:
    """Whose calls the viewer sees: their own, or (an admin) everyone's."""
    return None if viewer.admin else frozenset({viewer.identity.owner})


def calls(recent: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Newest first, as the tail shows them (how long ago worked out now)."""
    now = time.time()
    return [{**c, "ago_s": round(max(0.0, now - c["at"]), 1), "ms": round(c["seconds"] * 1000, 1)} for c in recent]


def call(recent: list[dict[str, Any]], ref: str) -> dict[str, Any] | None:
    """One call the viewer may see, by its reference (`replica-number`)."""
    return next((c for c in calls(recent) if c["ref"] == ref), None)


def figures(recent: list[dict[str, Any]], window_s: float = 3600.0) -> dict[str, Any]:
    """Per server and per tool over the last `window_s` of the recent calls the viewer may see (every replica's,
    on Redis): calls, calls/s, errors, p50 and p99 (nearest rank). Exact for what the call log holds."""
    now = time.time()
    shown = [c for c in recent if now - c["at"] <= window_s]
    span = max(1.0, now - min(c["at"] for c in shown)) if shown else 1.0
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for c in shown:
        groups.setdefault(("server", c["server"] or "gateway"), []).append(c)
        groups.setdefault(("tool", c["tool"]), []).append(c)
    rows = []
    for (kind, name), members in sorted(groups.items()):
        ms = sorted(m["seconds"] * 1000 for m in members)
        rows.append(
            {
                "kind": kind,
                "name": name,
                "calls": len(ms),
                "rate": round(len(ms) / span, 3),
                "errors": sum(1 for m in members if m["outcome"] != "ok"),
                "p50": round(_rank(ms, 0.50), 1),
                "p99": round(_rank(ms, 0.99), 1),
            }
        )
    return {"rows": rows, "window_s": window_s, "span_s": round(span)}


def _rank(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def replicas(counts: dict[str, dict[str, Any]], own: str) -> list[dict[str, Any]]:
    """Each live replica's all-time tool calls and errors (its `mcp.server.operation.duration` counts)."""
    rows = []
    for replica, snapshot in sorted(counts.items()):
        calls = [s for s in snapshot.get("server", []) if s[0][0] == "tools/call"]
        rows.append(
            {
                "replica": replica,
                "own": replica == own,
                "calls": sum(s[3] for s in calls),
                "errors": sum(s[3] for s in calls if s[0][2]),
                "seconds_ago": round(max(0.0, time.time() - snapshot.get("at", 0.0))),
            }
        )
    return rows
