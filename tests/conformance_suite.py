"""Run the official MCP conformance suite (server scenarios) against a URL; the outcome per scenario.

The suite and the Node it needs are installed pinned under `.node/` by `scripts/node-tools`. A run takes one of
the suite's *requirement sets* (`--requirements 2025-11-25` or `2026-07-28`): the scenarios a revision requires,
each run at that revision's wire (the initialize handshake for 2025-11-25, stateless per-request `_meta` for
2026-07-28), plus what the set runs without scoring (extensions, pending, added after release).

Usage: `python -m tests.conformance_suite http://127.0.0.1:PORT/mcp [REQUIREMENTS]` prints the table;
`python -m tests.conformance_page docs/conformance.md` writes the page of what `tests/system/test_conformance.py`
compares (each server alone vs through the gateway, both sets).
"""

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import anyio

from tests.harness import ROOT

NODE_BIN = ROOT / ".node" / "node_modules" / ".bin"
REQUIREMENTS = ("2025-11-25", "2026-07-28")
_LINE = re.compile(r"^([✓✗]) (\S+): (\d+) passed, (\d+) failed", re.MULTILINE)
_NOT_SCORED = re.compile(r"^  [✓✗] (\S+) \(([^)]+)\)$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Outcome:
    """One scenario's result: passed, its checks passed/failed, and why it is not scored (None: scored)."""

    passed: bool
    checks: tuple[int, int]
    not_scored: str | None = None

    def cell(self) -> str:
        ok, failed = self.checks
        return f"{'pass' if self.passed else 'FAIL'} {ok}/{ok + failed}"


def suite_command() -> list[str]:
    suite = NODE_BIN / "conformance"
    if not suite.exists():
        raise AssertionError(f"{suite} is missing: run ./scripts/setup-lab (it calls scripts/node-tools)")
    return [str(NODE_BIN / "node"), str(suite)]


async def run_suite(url: str, workdir: Path, requirements: str = REQUIREMENTS[0]) -> dict[str, Outcome]:
    """Every scenario of a requirement set against `url`: name -> outcome. The suite's results go to `workdir`."""
    argv = [*suite_command(), "server", "--url", url, "--requirements", requirements]
    env = {**os.environ, "PATH": f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    with anyio.fail_after(180):
        done = await anyio.run_process(argv, cwd=workdir, env=env, check=False)
    output = done.stdout.decode(errors="replace")
    reasons = dict(_NOT_SCORED.findall(output))
    outcome = {
        name: Outcome(mark == "✓", (int(ok), int(failed)), reasons.get(name))
        for mark, name, ok, failed in _LINE.findall(output)
    }
    if not outcome:
        raise AssertionError(f"the conformance suite printed no summary (exit {done.returncode}):\n{output[-2000:]}")
    return outcome


def passing(outcome: dict[str, Outcome]) -> set[str]:
    return {name for name, result in outcome.items() if result.passed}


def lost(direct: dict[str, Outcome], through: dict[str, Outcome]) -> list[str]:
    """The scenarios that pass against the server alone and not through the gateway: each one a gateway defect."""
    return sorted(passing(direct) - passing(through))


def table(title: str, direct: dict[str, Outcome], through: dict[str, dict[str, Outcome]]) -> str:
    """A markdown table, a row per scenario: the server alone, then each way through the gateway."""
    head = f"| {title} | alone | " + " | ".join(through) + " |"
    rule = "|---" * (2 + len(through)) + "|"
    rows = []
    for name, result in direct.items():
        label = name if result.not_scored is None else f"{name} *(not scored: {result.not_scored})*"
        cells = [result.cell(), *(way.get(name, Outcome(False, (0, 0))).cell() for way in through.values())]
        lost_here = result.passed and any(not way.get(name, Outcome(False, (0, 0))).passed for way in through.values())
        rows.append(f"| {label}{' **LOST**' if lost_here else ''} | " + " | ".join(cells) + " |")
    return "\n".join([head, rule, *rows])


def main() -> None:
    requirements = sys.argv[2] if len(sys.argv) > 2 else REQUIREMENTS[0]
    outcome = anyio.run(run_suite, sys.argv[1], Path.cwd(), requirements)
    lines = [
        f"{r.cell():>10}  {name}" + (f" (not scored: {r.not_scored})" if r.not_scored else "")
        for name, r in outcome.items()
    ]
    sys.stdout.write("\n".join([*lines, f"{len(passing(outcome))} of {len(outcome)} scenarios pass", ""]))


if __name__ == "__main__":
    main()
