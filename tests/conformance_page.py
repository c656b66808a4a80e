"""Writes docs/conformance.md: the official suite's comparison (`tests/conformance_runs.py`) as tables, the gateway
as an OAuth client in its `auth/*` client scenarios (`tests/conformance_auth.py`), and what the suite does not score,
with the tests that check it.

Usage: `.venv/bin/python -m tests.conformance_page docs/conformance.md` (about two minutes for both servers alone and
behind three gateways, both requirement sets; the 39 sign-in runs add about two, CPU-bound).
"""

import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import anyio

from tests.conformance_auth import run_all
from tests.conformance_auth import table as auth_table
from tests.conformance_runs import REQUIREMENTS, compare, setups
from tests.conformance_suite import NODE_BIN, lost, passing, table

INTRO = """# Conformance

The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in `tests/conformance/package.json`)
runs its server scenarios of both requirement sets, **2025-11-25** (initialize handshake) and **2026-07-28**
(stateless, per-request `_meta`), against each server alone and through the gateway in front of it (HTTP front,
`prefix: false`), in `./scripts/test` (`tests/system/test_conformance.py`). A scenario that passes against the server
alone and fails through the gateway fails the suite; one that fails against the server alone is reported.

- **everything**: the reference server `@modelcontextprotocol/server-everything` (TypeScript SDK 1.x: it speaks the
  handshake era only, and its tools are not the suite's fixtures, so many rows fail against it alone).
- **fixtures**: the suite's own reference fixtures (`tests/servers/conformance.py`, both eras), behind the gateway
  as a stdio downstream (`protocol: legacy`) and as a Streamable HTTP one (2026 era).

A cell is `pass`/`FAIL` and the scenario's checks passed of run. Rows the set runs without scoring say why
(`extension`, `pending`: the suite's own reference cannot pass it yet, `added-after-release`).
Regenerate with `.venv/bin/python -m tests.conformance_page docs/conformance.md`.
"""

ITEM = "see issue 32 item {}"
GATEWAY_ONLY: list[tuple[str, str, str]] = [
    (
        "MCP Apps: a tool's `ui://` resource exposed as `ui://<server>+…` and readable through the gateway; "
        '`_meta.ui.resourceUri` and the flat `_meta["ui/resourceUri"]` rewritten in `tools/list` and tool results; '
        "`csp`, `permissions`, `domain`, `prefersBorder`, `visibility` and `text/html;profile=mcp-app` passed as "
        "sent; an app's own tool calls by its server's names routed to it",
        "pass",
        "`tests/routing/test_apps.py` (the ext-apps reference servers system-monitor, map, transcript from npm)",
    ),
    (
        "Era translation, 2026-07-28 client to a handshake-era server",
        "pass",
        "the **everything** 2026-07-28 table (rows that pass only through the gateway); "
        "`test_a_2026_client_is_served_by_the_handshake_era_reference_server_through_the_gateway`",
    ),
    ("Era translation, handshake client to a 2026-era server", "pass", "the **fixtures** 2025-11-25 table, `via http`"),
    (
        "Tasks relayed (ids mapped per server, scoped per identity; a server's task resolved for a client without)",
        "pass on main",
        "`tests/downstreams/test_tasks.py`, `tests/fronts/test_tasks*.py`; the suite's `tasks-*` rows above",
    ),
    ("A refused or unknown-version `server/discover` never fixes a connection's era", ITEM.format(1), ""),
    ("Input rounds complete for every client/server pairing", ITEM.format(2), ""),
    ("`MCP-Protocol-Version` header and `_meta` version agree (400 naming both)", ITEM.format(3), ""),
    ("`Mcp-Name` rewritten with the tool name on the way down", ITEM.format(3), ""),
    ("`x-mcp-header` parameters mirrored into `Mcp-Param-*` and checked", ITEM.format(3), ""),
    (
        "List TTL and `cacheScope: private` where a list differs per identity",
        ITEM.format(3),
        "the suite's `caching` row checks the TTL fields only",
    ),
    ("Credentials collected by URL-mode elicitation never reach the client", ITEM.format(3), ""),
]
"""What the suite does not score: (behaviour, state, what checks it)."""


AUTH_INTRO = """## Signing in (client auth)

The suite's `auth/*` client scenarios of both sets, with **the gateway as the OAuth client** of a protected server
(`auth: {type: oauth}`): per scenario the suite starts an authorization server and an MCP server, and
`tests/conformance_client.py` does what a stdio user does, with the gateway's code in the test's process (the suite
starts `tests/conformance_shim.py`, which hands it the scenario): `gateway login`'s sign-in (its link followed by
an httpx "browser"; the suite's authorization server approves without a consent page), then every tool of the
server called through the gateway, and the sign-in again where an answer asks for it. The gateway speaks the
scenario's era to the server (`protocol: legacy` for 2025-11-25, `modern` for 2026-07-28). Held to this table by
`tests/system/test_conformance_auth.py` (an expected failure that starts passing fails it too).

{passed} of {run} scenario runs pass; each one that fails is an expected failure, its reason below the table.

"""


async def auth_section() -> str:
    outcome = await run_all()
    passed = sum(result.passed for result in outcome.values())
    return AUTH_INTRO.format(passed=passed, run=len(outcome)) + auth_table(outcome) + "\n"


def gateway_only() -> str:
    rows = [f"| {what} | {state} | {checked} |" for what, state, checked in GATEWAY_ONLY]
    head = ["## What the suite does not score", "", "| gateway behaviour | state | checked by |", "|---|---|---|"]
    return "\n".join([*head, *rows, ""])


async def page() -> str:
    version = (NODE_BIN.parent / "@modelcontextprotocol" / "conformance" / "package.json").read_text()
    suite = next(line.split('"')[3] for line in version.splitlines() if line.strip().startswith('"version"'))
    parts = [INTRO, f"Suite {suite}; run {datetime.now(UTC):%Y-%m-%d}.\n"]
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        async with setups(tmp) as running:
            for server, setup in running.items():
                for requirements in REQUIREMENTS:
                    c = await compare(setup, requirements, tmp)
                    alone = len(passing(c.alone))
                    ways = ", ".join(f"{w} {len(passing(t))}" for w, t in c.through.items())
                    lost_rows = sorted({n for t in c.through.values() for n in lost(c.alone, t)})
                    parts.append(
                        f"## {server}, {requirements}\n\n{alone} of {len(c.alone)} scenarios pass alone; through the "
                        f"gateway: {ways}. Lost through the gateway: {', '.join(lost_rows) or 'none'}.\n\n"
                        + table("scenario", c.alone, c.through)
                        + "\n"
                    )
    parts.append(await auth_section())
    return "\n".join([*parts, gateway_only()])


def main() -> None:
    Path(sys.argv[1]).write_text(anyio.run(page), encoding="utf-8")


if __name__ == "__main__":
    main()
