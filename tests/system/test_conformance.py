"""The official MCP conformance suite, both requirement sets (2025-11-25, 2026-07-28), each server alone vs through
the gateway, row by row (the servers and the ways through: `tests/conformance_runs.py`).

A scenario that passes against a server alone must pass through the gateway, every way: one that does not is a
gateway defect, and fails here. Scenarios that fail against the server alone are reported (printed; `-rP` shows
on the terminal), not failed: the gateway may pass them (it adds DNS-rebinding protection of its own, and translates a
2026-era client to a handshake-era server). `python -m tests.conformance_page docs/conformance.md` writes the
same comparison as the page in docs/.
"""

import sys
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from tests.conformance_runs import REQUIREMENTS, Comparison, compare, setups
from tests.conformance_suite import lost, passing

pytestmark = pytest.mark.anyio

Compared = Callable[[str, str], Awaitable[Comparison]]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def compared(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Compared]:
    """Runs a requirement set against a server alone and through the gateway, once per module."""
    tmp = tmp_path_factory.mktemp("conformance")
    done: dict[tuple[str, str], Comparison] = {}
    async with setups(tmp) as running:

        async def get(server: str, requirements: str) -> Comparison:
            if (server, requirements) not in done:
                done[server, requirements] = await compare(running[server], requirements, tmp)
            return done[server, requirements]

        yield get


@pytest.mark.parametrize("requirements", REQUIREMENTS)
@pytest.mark.parametrize("server", ["everything", "fixtures"])
async def test_every_scenario_passing_against_the_server_alone_passes_through_the_gateway(
    compared: Compared, server: str, requirements: str, capsys: pytest.CaptureFixture[str]
) -> None:
    comparison = await compared(server, requirements)
    failing_alone = sorted(set(comparison.alone) - passing(comparison.alone))
    gained = {way: sorted(passing(through) - passing(comparison.alone)) for way, through in comparison.through.items()}
    with capsys.disabled():  # the report, on the terminal of every run
        sys.stdout.write(
            f"\n[conformance {server} {requirements}] {len(failing_alone)} of {len(comparison.alone)} fail against the "
            f"server alone (reported, not failed): {', '.join(failing_alone) or '-'}; pass only through the gateway: "
            f"{gained}\n"
        )
    lost_ways = {way: lost(comparison.alone, through) for way, through in comparison.through.items()}
    assert not any(lost_ways.values()), f"pass against {server} alone but not through the gateway: {lost_ways}"


async def test_the_suites_fixtures_pass_every_scored_2025_scenario_alone(compared: Compared) -> None:
    # Keeps the comparison meaningful: the fixtures are the suite's own reference, so nearly every row can be lost.
    alone = (await compared("fixtures", "2025-11-25")).alone
    scored = {name for name, outcome in alone.items() if outcome.not_scored is None}
    assert len(scored) >= 30 and scored <= passing(alone), sorted(scored - passing(alone))


async def test_a_2026_client_is_served_by_the_handshake_era_reference_server_through_the_gateway(
    compared: Compared,
) -> None:
    # server-everything (TypeScript SDK 1.x) answers no 2026-07-28 request itself; the gateway translates.
    comparison = await compared("everything", "2026-07-28")
    translated = {"tools-list", "tools-call-simple-text", "resources-list", "prompts-list", "caching"}
    assert not translated & passing(comparison.alone)
    assert translated <= passing(comparison.through["via stdio"]), sorted(comparison.through["via stdio"])
