"""The official conformance suite's `auth/*` client scenarios, both requirement sets (2025-11-25, 2026-07-28), with
THE GATEWAY as the OAuth client under test: per scenario the suite starts an authorization server and a protected MCP
server, and `tests/conformance_client.py` does what a stdio user does (a config with `auth: {type: oauth}`, `gateway
login` followed in an httpx "browser", then every tool called through the gateway, signing in again when an answer
says so). Every scored scenario passes, or is in `tests/conformance_auth.EXPECTED_FAILURES` with the reason; one that
starts passing fails here too, so the table stays true. The page: docs/conformance.md, "Signing in (client auth)".
"""

import sys

import pytest

from tests.conformance_auth import EXPECTED_FAILURES, run_all, table
from tests.conformance_suite import REQUIREMENTS

# 14 + 25 scenarios, six at a time, each a node process of the suite's and a sign-in and a gateway in this process
# (~0.7 s of CPU each): ~15 s. The bound is for a machine the other tests share.
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(400)]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize("requirements", REQUIREMENTS)
async def test_every_auth_scenario_of_the_set_passes_with_the_gateway_as_the_oauth_client(requirements: str) -> None:
    outcome = await run_all((requirements,))
    sys.stdout.write(table(outcome) + "\n")  # the page's rows (docs/conformance.md); -rP or -s shows them
    wrong = {key: result for key, result in outcome.items() if result.passed == (key in EXPECTED_FAILURES)}
    report = "\n\n".join(
        f"{name}: {result.cell()}"
        + (" (expected to fail, passes now: take it out of EXPECTED_FAILURES)" if result.passed else "")
        + ("" if result.passed else "\n" + result.output[-3000:])
        for (_, name), result in sorted(wrong.items())
    )
    assert not wrong, report
