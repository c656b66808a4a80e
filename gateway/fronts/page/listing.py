"""The Calls tab's list: the recent calls the viewer may see, filtered (identity, client, server, tool, outcome),
searched, paged, and exported as JSON or CSV exactly as filtered. Worked out per request from the call log (500
calls by default: a pass over plain dicts)."""

import csv
import io
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from gateway.middleware.record import OUTCOMES

FILTERS = ("identity", "client", "server", "tool", "outcome")
PAGE_SIZE = 50
EXPORTED = (
    "ref", "when", "identity", "client", "server", "tool", "outcome", "refusal", "ms",
    "request_bytes", "response_bytes", "spilled", "hints", "trace_id", "error",
)  # fmt: skip
_SEARCHED = ("ref", "tool", "identity", "client", "server", "outcome", "refusal", "error", "trace_id")
MAX_QUERY = 200
"""Characters of a search or filter value kept (a URL may carry any length)."""


def chosen(query: Mapping[str, str]) -> dict[str, str]:
    """The filters and search the query string asks for (empty ones left out, each cut to `MAX_QUERY`)."""
    picked = {name: query.get(name, "").strip()[:MAX_QUERY] for name in (*FILTERS, "q")}
    return {name: value for name, value in picked.items() if value}


def matching(calls: list[dict[str, Any]], picked: Mapping[str, str]) -> list[dict[str, Any]]:
    wanted = [(name, picked[name]) for name in FILTERS if name in picked]
    words = picked.get("q", "").lower().split()
    found = []
    for c in calls:
        if any(str(c.get(name) or "") != value for name, value in wanted):
            continue
        if words:
            text = " ".join(str(c.get(field) or "") for field in _SEARCHED).lower()
            if not all(word in text for word in words):
                continue
        found.append(c)
    return found


def page(calls: list[dict[str, Any]], query: Mapping[str, str]) -> dict[str, Any]:
    """One page of the filtered calls, newest first, with what the filter menus offer and the links around it."""
    picked = chosen(query)
    found = matching(calls, picked)
    pages = max(1, -(-len(found) // PAGE_SIZE))
    try:
        number = min(pages, max(1, int(query.get("page", "1"))))
    except ValueError:
        number = 1
    options = {name: sorted({str(c[name]) for c in calls if c.get(name)}) for name in FILTERS}
    options["outcome"] = list(OUTCOMES)

    def link(**changes: Any) -> str:
        return "?" + urlencode({**picked, **{k: v for k, v in changes.items() if v}})

    return {
        "calls": found[(number - 1) * PAGE_SIZE : number * PAGE_SIZE],
        "picked": picked,
        "options": options,
        "total": len(calls),
        "matched": len(found),
        "page": number,
        "pages": pages,
        "newer": link(page=number - 1 if number > 2 else None) if number > 1 else None,
        "older": link(page=number + 1) if number < pages else None,
        "export": urlencode(picked),
    }


def exported(calls: list[dict[str, Any]], kind: str) -> str:
    """The calls (already filtered) as JSON or CSV, one record per call with the `EXPORTED` fields."""
    rows = [{field: c.get(field) for field in EXPORTED} for c in calls]
    if kind == "json":
        return json.dumps(rows, indent=1)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=EXPORTED)
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(v) for k, v in row.items()})
    return out.getvalue()


def _cell(value: Any) -> str:
    """A CSV cell a spreadsheet will not run: text starting with = + - @ (a caller's tool name may) is quoted."""
    text = ", ".join(value) if isinstance(value, list) else "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text
