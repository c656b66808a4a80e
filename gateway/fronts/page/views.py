"""What each tab of the page shows, as plain data for its template: worked out when someone looks, from the
running gateway's own state (registry status, catalog, exposure, policy, the recorder, the Think library).

Tokens and secrets are never part of it (as in the audit log): a call shows its tool, identity, outcome, sizes and
results, and what it was called with only to the person who made it, if they chose to keep it (`visible`).
"""

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import mcp.types as types

from gateway.fronts.page import trying
from gateway.fronts.page.observed import Observed
from gateway.middleware.exposure.listed import definition_chars
from gateway.middleware.policy import Subject
from gateway.routing.catalog import Catalog, Entry
from gateway.session import Identity, Session


@dataclass(frozen=True, slots=True)
class Viewer:
    identity: Identity
    admin: bool
    """May change state, and sees every identity's calls (others see their own)."""


SERVING = frozenset({"up", "idle"})
"""States in which a server takes calls (idle: a per-user server whose next call starts a process)."""


def health(gateway: Observed) -> dict[str, Any]:
    """The servers at a glance: each worded and told apart (a command that cannot start is not a network blip),
    when it began failing and when the next try is, and a summary line with `/healthz`'s own verdict."""
    now = time.time()
    report = gateway.health()
    rows = [_server(name, status, now) for name, status in sorted(report["servers"].items())]
    down = [r for r in rows if r["state"] not in SERVING]
    summary = f"{len(down)} of {len(rows)} servers down" if down else f"All {len(rows)} servers up"
    died = sorted(report.get("died", {}).items())
    return {"servers": rows, "summary": summary, "status": report["status"], "died": died}


def _server(name: str, status: dict[str, Any], now: float) -> dict[str, Any]:
    state, error = status["state"], status.get("last_error") or ""
    if state in SERVING or state == "starting":
        trouble = None
    elif "cannot start" in error:  # the stdio adapter's OSError starting the command, as `errors.describe` words it
        trouble = "cannot start: fix its command in the config; retrying will not help"
    else:
        trouble = "unreachable: retried with a growing pause until it answers"
    since, next_try = status.get("failing_since"), status.get("next_try")
    return {
        "name": name,
        **status,
        "trouble": trouble,
        "since": None if since is None or state in SERVING else f"since {when(since)} ({span(now - since)})",
        "next_in": None if next_try is None else f"next try in {span(next_try - now)}",
    }


def span(seconds: float) -> str:
    """A length of time as a person reads it: seconds, minutes, hours."""
    seconds = max(0, round(seconds))
    return f"{seconds} s" if seconds < 120 else f"{seconds // 60} min" if seconds < 7200 else f"{seconds // 3600} h"


KINDS = frozenset({"jwt", "static", "os", "anonymous"})


def identities(gateway: Observed, viewer: Viewer, seen: Sequence[dict[str, Any]] = ()) -> list[Identity]:
    """Whose listing the catalog shows: the viewer, and for an admin every configured static token's identity and
    every identity the recent calls show (a JWT's too: its name and groups, which is what policy rules match)."""
    shown = {viewer.identity.key: viewer.identity}
    if viewer.admin:
        for token in gateway.config.auth.tokens:
            who = Identity(token.name, "static", token.name, groups=frozenset(token.groups))
            shown.setdefault(who.key, who)
        for call in seen:
            kind = call.get("kind")
            if kind in KINDS and not any(i.name == call["identity"] for i in shown.values()):
                who = Identity(call["identity"], kind, call["identity"], groups=frozenset(call.get("groups") or ()))
                shown.setdefault(who.key, who)
    return list(shown.values())


def rule_listings(gateway: Observed, catalog: Catalog, viewer: Viewer) -> list[dict[str, Any]]:
    """Per exposure rule, what a new session of the viewer's under it is listed: the very `tools/list` computation
    (`Exposure.listed`), beside what listing everything would cost."""
    exposure = gateway.exposure
    session = Session(f"page:{viewer.identity.key}", viewer.identity)
    rows = []
    for _label, rule in exposure.ways():  # each client rule, and the clients that search tools themselves
        listed = exposure.listed(catalog, session, rule)
        tools, chars = exposure.full_size(catalog, rule)
        native = rule.native and not rule.client_glob
        rows.append(
            {
                "client": ", ".join(exposure.config.native_search) if native else rule.client_glob or "(default)",
                "mode": f"{rule.mode} + search hints" if rule.native else rule.mode,
                "searching": exposure.searching(catalog, rule),
                "listed": len(listed),
                "listed_chars": sum(definition_chars(t) for t in listed),
                "tools": tools,
                "chars": chars,
                "names": {t.name for t in listed},
            }
        )
    return rows


async def catalog(
    gateway: Observed, viewer: Viewer, query: str = "", seen: Sequence[dict[str, Any]] = ()
) -> dict[str, Any]:
    """Every tool with its size, and per identity whether it is listed or the policy rule that hides it (each
    rule's reason said once, below); per exposure rule what a client under it is actually listed; with a `query`,
    find_tools' ranking of it as the viewer would get it."""
    catalog = await gateway.registry.catalog()
    exposure, who = gateway.exposure, identities(gateway, viewer, seen)
    found: dict[str, Any] | None = None
    if query:
        try:
            matches = exposure.search(catalog, Session(f"page:{viewer.identity.key}", viewer.identity), query, limit=10)
        except ValueError as exc:  # over the query length limit: said, as find_tools says it
            found = {"query": query, "error": str(exc), "hits": [], "total": 0, "terms": []}
        else:
            hits = [{"name": h.name, "server": h.server, "score": round(h.score, 3)} for h in matches.hits]
            found = {"query": query, "error": None, "hits": hits, "total": matches.total, "terms": matches.terms}
    rules = rule_listings(gateway, catalog, viewer)
    default = rules[0]
    names = exposure.names(catalog, exposure.rules()[0].separator)
    denials: dict[str, str] = {}
    rows = []
    for entry in catalog.tools.values():
        if not isinstance(entry.item, types.Tool):
            continue
        per: list[str] = []
        for identity in who:
            denied = gateway.policy.denial(identity, Subject.of(entry))
            if denied is None:
                per.append("listed")
            else:
                denials.setdefault(denied.rule, denied.why)
                per.append(f"hidden: {denied.rule}")
        rows.append(
            {
                "name": entry.exposed,
                "server": entry.server,
                "chars": definition_chars(entry.item),
                "found_only": default["searching"] and names.to_session(entry.exposed) not in default["names"],
                "per": per,
            }
        )
    for rule in rules:
        del rule["names"]
    return {
        "rules": rules,
        "identities": [i.name for i in who],
        "tools": rows,
        "found": found,
        "query": query,
        "denials": denials,
    }


def tried(entry: Entry) -> dict[str, Any]:
    """A tool as its try form shows it: what it does, its fields, whether it may change things."""
    assert isinstance(entry.item, types.Tool)
    tool = entry.item
    return {
        "name": entry.exposed,
        "server": entry.server,
        "description": tool.description or "",
        "fields": trying.fields(tool),
        "changes_state": trying.changes_state(tool),
        "destructive": trying.destructive(tool),
    }


def owners(viewer: Viewer) -> frozenset[str] | None:
    """Whose calls the viewer sees: their own, or (an admin) everyone's."""
    return None if viewer.admin else frozenset({viewer.identity.owner})


def visible(recent: list[dict[str, Any]], viewer: Viewer) -> list[dict[str, Any]]:
    """The calls as the viewer may see them: another person's without its arguments, an admin's view too."""
    mine = viewer.identity.owner
    return [c if c.get("owner") == mine or c.get("arguments") is None else {**c, "arguments": None} for c in recent]


def calls(recent: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Newest first, as the tail shows them, each with its time (UTC, to the second) and duration in ms."""
    return [{**c, "when": when(c["at"]), "ms": round(c["seconds"] * 1000, 1)} for c in recent]


def when(at: float) -> str:
    """An absolute time as the page shows it (UTC): "3605.2 s ago" is no time a person can place."""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def call(recent: list[dict[str, Any]], ref: str) -> dict[str, Any] | None:
    """One call the viewer may see, by its reference (`replica-number`)."""
    return next((c for c in calls(recent) if c["ref"] == ref), None)
