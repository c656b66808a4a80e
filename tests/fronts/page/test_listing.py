"""The Calls tab's list: filters, search, paging and the export of exactly what is filtered, over plain call-log
entries (the shape `gateway.middleware.publish.entry` writes)."""

import csv
import io
import json
from typing import Any

from gateway.fronts.page import listing


def calls(n: int) -> list[dict[str, Any]]:
    return [
        {
            "ref": f"r-{i}",
            "identity": "alice" if i % 2 else "bob",
            "client": "claude-code",
            "server": "k",
            "tool": "k.echo" if i % 3 else "k.boom",
            "outcome": "ok" if i % 3 else "server error",
            "error": None if i % 3 else "Server 'k' failed: kaboom",
        }
        for i in range(n, 0, -1)
    ]


def test_filters_and_search_narrow_the_list_and_every_page_keeps_them() -> None:
    shown = listing.page(calls(300), {"identity": "alice", "q": "KABOOM", "page": "2"})
    assert shown["matched"] == 50 and shown["pages"] == 1 and shown["page"] == 1  # page 2 of 1: the last there is
    assert {(c["identity"], c["tool"]) for c in shown["calls"]} == {("alice", "k.boom")}
    paged = listing.page(calls(300), {"outcome": "ok", "page": "2"})
    assert paged["matched"] == 200 and paged["pages"] == 4 and len(paged["calls"]) == 50
    assert paged["older"] == "?outcome=ok&page=3" and paged["newer"] == "?outcome=ok"
    assert paged["calls"][0]["ref"] == listing.matching(calls(300), {"outcome": "ok"})[50]["ref"]
    assert listing.page(calls(3), {"page": "x" * 10_000})["page"] == 1  # a bad page number: the first


def test_an_export_holds_every_filtered_call_and_no_cell_a_spreadsheet_would_run() -> None:
    found = listing.matching(calls(300), listing.chosen({"tool": "k.boom"}))
    records = json.loads(listing.exported(found, "json"))
    assert len(records) == 100 and {r["tool"] for r in records} == {"k.boom"}
    hostile = [{**found[0], "tool": '=HYPERLINK("http://evil")', "hints": ["error", "bootstrap"]}]
    [row] = list(csv.DictReader(io.StringIO(listing.exported(hostile, "csv"))))
    assert row["tool"] == '\'=HYPERLINK("http://evil")' and row["hints"] == "error, bootstrap"
