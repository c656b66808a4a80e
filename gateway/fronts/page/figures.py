"""The Metrics tab's figures: per server, tool and refusing rule over the recent calls the viewer may see, and each
live replica's all-time counts."""

import time
from typing import Any

from gateway.middleware.record import OUTCOMES


def figures(recent: list[dict[str, Any]], window_s: float = 3600.0) -> dict[str, Any]:
    """Per server, per tool and per refusing rule over the last `window_s` of the recent calls the viewer may see
    (every replica's, on Redis): calls, calls/s, each outcome, p50 and p99 (nearest rank). A refused call counts
    for its tool and the rule that refused it, never as an error of a server (none was asked)."""
    now = time.time()
    shown = [c for c in recent if now - c["at"] <= window_s]
    span = max(1.0, now - min(c["at"] for c in shown)) if shown else 1.0
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for c in shown:
        if c["outcome"] == "refused":
            groups.setdefault(("rule", c.get("refusal") or "the gateway"), []).append(c)
        elif c["server"] is not None:
            groups.setdefault(("server", c["server"]), []).append(c)
        groups.setdefault(("tool", c["tool"]), []).append(c)
    rows = []
    for (kind, name), members in sorted(groups.items()):
        ms = sorted(m["seconds"] * 1000 for m in members)
        counted = {word: sum(1 for m in members if m["outcome"] == word) for word in OUTCOMES}
        rows.append(
            {
                "kind": kind,
                "name": name,
                "calls": len(ms),
                "rate": round(len(ms) / span, 3),
                "outcomes": counted,
                "p50": round(_rank(ms, 0.50), 1),
                "p99": round(_rank(ms, 0.99), 1),
            }
        )
    return {"rows": rows, "window_s": window_s, "span_s": round(span), "outcomes": OUTCOMES}


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
