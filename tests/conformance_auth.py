"""The conformance suite's `auth/*` client scenarios with the gateway as the client under test: which a requirement set
scores, one scenario's run (its client is `tests/conformance_client.py`, in this process: the suite starts
`tests/conformance_shim.py`, which hands the scenario to `driver`), and the outcome as the page's table.

Usage: `python -m tests.conformance_auth` prints the table of both requirement sets; `tests/system/
test_conformance_auth.py` holds them to the expected failures below, and `tests/conformance_page.py` puts the table in
docs/conformance.md.
"""

import json
import os
import re
import signal
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import yaml
from anyio.abc import SocketStream
from cryptography.fernet import Fernet

from tests.conformance_client import TOKEN_KEY_ENV, run
from tests.conformance_suite import NODE_BIN, REQUIREMENTS, suite_command
from tests.harness import PYTHON, ROOT

EXPECTED_FAILURES: dict[tuple[str, str], str] = {}
"""(requirement set, scenario) -> why the gateway does not pass it yet. One that starts passing fails the test too,
so this table stays true."""
LEFT_OUT = (
    "the sets' unscored extensions: `auth/client-credentials-basic` and `-jwt` (a service identity: issue 34 item 4, "
    "`client_credentials`), `auth/enterprise-managed-authorization`, `auth/dpop`, `auth/dpop-nonce`, "
    "`auth/wif-jwt-bearer`"
)
SCENARIO_S = 120.0
"""One scenario's bound, the suite's client timeout included, on a machine the other tests share."""
SHIM = f"{PYTHON} -S -E {ROOT / 'tests' / 'conformance_shim.py'}"
"""The command the suite runs as its client: no site packages, so no SDK import per scenario."""
_RESULT = re.compile(r"Passed: (\d+)/(\d+), (\d+) failed, (\d+) warnings")


@dataclass(frozen=True, slots=True)
class ClientOutcome:
    passed: bool
    checks: tuple[int, int]
    """Checks passed, of run."""
    output: str
    """The suite's report: the checks that failed and, when the client failed, its stderr."""

    def cell(self) -> str:
        return f"{'pass' if self.passed else 'FAIL'} {self.checks[0]}/{self.checks[1]}"


def scenarios(requirements: str) -> list[str]:
    """The `auth/*` client scenarios a requirement set scores."""
    path = NODE_BIN.parent / "@modelcontextprotocol" / "conformance" / "requirements" / f"{requirements}.yaml"
    listed = yaml.safe_load(path.read_text(encoding="utf-8"))["client"]
    return [name for name in listed if name.startswith("auth/")]


async def _scenario(stream: SocketStream) -> None:
    """One scenario the shim handed over: run it and answer with (what went wrong, the log)."""
    async with stream:
        asked = json.loads(b"".join([chunk async for chunk in stream]))
        failed, log = await run(asked["url"], asked["env"])
        await stream.send(json.dumps({"failed": failed, "log": log}).encode())


@asynccontextmanager
async def driver() -> AsyncIterator[Path]:
    """Scenarios run in this process while it is open: yields the Unix socket the shim hands them to. The tokens they
    keep are sealed with a key of this run's own (`TOKEN_KEY_ENV`)."""
    os.environ.setdefault(TOKEN_KEY_ENV, Fernet.generate_key().decode())
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    with tempfile.TemporaryDirectory(prefix="conformance-") as folder:
        path = Path(folder) / "driver.sock"
        try:
            async with await anyio.create_unix_listener(path) as listener, anyio.create_task_group() as tg:
                tg.start_soon(listener.serve, _scenario)
                yield path
                tg.cancel_scope.cancel()
        finally:  # each sign-in's uvicorn takes them while it runs, and concurrent ones restore each other's
            for sig, handler in handlers.items():
                signal.signal(sig, handler)


async def run_scenario(scenario: str, requirements: str, driven_by: Path) -> ClientOutcome:
    argv = [
        *suite_command(),
        "client",
        "--scenario",
        scenario,
        "--spec-version",
        requirements,
        "--timeout",
        str(int(SCENARIO_S * 1000) - 10_000),
        "--command",
        SHIM,
    ]
    path = f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {**os.environ, "PATH": path, "NO_COLOR": "1", "CONFORMANCE_DRIVER": str(driven_by)}
    with anyio.fail_after(SCENARIO_S):
        done = await anyio.run_process(argv, cwd=ROOT, env=env, check=False)
    output = (done.stdout + done.stderr).decode(errors="replace")
    found = _RESULT.search(output)
    if found is None:
        raise AssertionError(f"the suite printed no result for {scenario} (exit {done.returncode}):\n{output[-2000:]}")
    ok, run = int(found[1]), int(found[2])
    return ClientOutcome("OVERALL: PASSED" in output, (ok, run), output)


async def run_all(sets: tuple[str, ...] = REQUIREMENTS, limit: int = 6) -> dict[tuple[str, str], ClientOutcome]:
    """Every scored `auth/*` scenario of the requirement sets, `limit` at a time: (set, scenario) -> outcome."""
    outcome: dict[tuple[str, str], ClientOutcome] = {}
    limiter = anyio.CapacityLimiter(limit)

    async def one(requirements: str, scenario: str, driven_by: Path) -> None:
        async with limiter:
            outcome[requirements, scenario] = await run_scenario(scenario, requirements, driven_by)

    async with driver() as driven_by, anyio.create_task_group() as tg:
        for requirements in sets:
            for scenario in scenarios(requirements):
                tg.start_soon(one, requirements, scenario, driven_by)
    return outcome


def table(outcome: dict[tuple[str, str], ClientOutcome]) -> str:
    """A markdown table, a row per scenario, a column per requirement set run; the expected failures' reasons below."""
    sets = [r for r in REQUIREMENTS if any(key[0] == r for key in outcome)]
    names = list(dict.fromkeys(name for requirements in sets for name in scenarios(requirements)))
    rows = [f"| scenario | {' | '.join(sets)} |", "|---" * (1 + len(sets)) + "|"]
    for name in names:
        cells = [outcome[r, name].cell() if (r, name) in outcome else "—" for r in sets]
        rows.append(f"| {name} | {' | '.join(cells)} |")
    reasons = sorted(set(EXPECTED_FAILURES.values()))
    return "\n".join([*rows, "", *(f"Expected to fail: {why}." for why in reasons), f"Left out: {LEFT_OUT}."])


def main() -> None:
    sys.stdout.write(table(anyio.run(run_all)) + "\n")


if __name__ == "__main__":
    main()
