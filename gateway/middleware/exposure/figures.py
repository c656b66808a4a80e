"""What a client's window would hold, per exposure mode and client rule; `find_tools` from the command line.

`gateway tools` prints these. Tokens are estimated as characters / 4 (the usual rule of thumb for JSON
and English; real tokenizers differ by some 10-20 %).
"""

from dataclasses import replace
from typing import Any

from gateway.middleware.exposure import semantic
from gateway.middleware.exposure.listed import OWN_SERVERS, definition_chars
from gateway.middleware.exposure.rules import Rule
from gateway.middleware.exposure.view import Exposure
from gateway.routing.catalog import Catalog
from gateway.session import Session

CLIENT_CAPS = ((128, "VS Code / Copilot and OpenAI-based clients use at most 128"), (40, "Cursor uses at most 40"))
"""Tool counts at which known clients stop using tools, largest first."""


def measure(exposure: Exposure, catalog: Catalog, rule: Rule) -> dict[str, Any]:
    """Tools, characters and estimated tokens a fresh session under `rule` is listed."""
    tools = exposure.listed(catalog, Session("figures"), rule)
    chars = sum(definition_chars(t, rule) for t in tools)
    names = exposure.names(catalog, rule.separator)
    own = {names.to_session(n) for n, e in catalog.tools.items() if e.server in OWN_SERVERS}
    return {
        "tools": len(tools),
        "chars": chars,
        "tokens": chars // 4,
        "own_chars": sum(definition_chars(t, rule) for t in tools if t.name in own),
        "searching": exposure.searching(catalog, rule),
        "native": rule.native,
    }


def rows(exposure: Exposure, catalog: Catalog) -> list[dict[str, Any]]:
    """One row per mode (under the default rule), then one per way a client is listed (`Exposure.ways`)."""
    default = exposure.rules()[0]
    out = [{"view": f"mode {m}", **measure(exposure, catalog, replace(default, mode=m))} for m in ("all", "search")]
    for label, rule in exposure.ways():
        hints = " + hints" if rule.native else ""
        out.append({"view": f"{label} ({rule.mode}{hints})", **measure(exposure, catalog, rule)})
    return out


def render(figures: list[dict[str, Any]]) -> list[str]:
    lines = [f"{'WHAT A CLIENT IS LISTED':<40}  {'TOOLS':>5}  {'CHARS':>9}  {'~TOKENS':>8}  {'OF WHICH OWN':>12}"]
    for row in figures:
        line = f"{row['view']:<40}  {row['tools']:>5}  {row['chars']:>9,}  {row['tokens']:>8,}  {row['own_chars']:>12,}"
        if not row["view"].startswith("mode") and row["searching"]:
            line += "  (search: the rest through gateway.find_tools)"
        # A client that searches natively defers what it lists behind its own search: no cap applies.
        warning = None if row.get("native") else next((why for cap, why in CLIENT_CAPS if row["tools"] > cap), None)
        if warning:
            line += f"  ⚠ {row['tools']} tools: {warning}"
        lines.append(line)
    return lines


def find_lines(exposure: Exposure, catalog: Catalog, query: str, limit: int) -> list[str]:
    """`gateway tools --find`: the hits find_tools would give, one per line."""
    matches = exposure.search(catalog, Session("cli"), query, limit=limit)
    rankers = exposure.index.rankers
    how = " + ".join(rankers) + (f" ({semantic.MODEL}, scores fused)" if "semantic" in rankers else "")
    if not matches.hits:
        searched = ", ".join(matches.terms) or "no word about a tool"
        return [f"no tool matches {query!r} (searched: {searched}; ranked by {how})"]
    lines = [f"{len(matches.hits)} of {matches.total} tools matching {query!r}, ranked by {how}:"]
    for rank, hit in enumerate(matches.hits, 1):
        first = (hit.tool.description or "").strip().split("\n", 1)[0][:100]
        lines.append(f"{rank:>2}. {hit.name:<44} {hit.score:>7.2f}  {first}")
    return lines if (problem := semantic.problem()) is None else [*lines, f"note: {problem}"]
