"""Run the official MCP conformance suite (server scenarios) against a URL; the outcome per scenario.

The suite and the Node it needs are installed pinned under `.node/` by `scripts/node-tools`.
Usage: `python -m tests.conformance_suite http://127.0.0.1:PORT/mcp` prints the table.
"""

import os
import re
import sys
from pathlib import Path

import anyio

from tests.harness import ROOT

NODE_BIN = ROOT / ".node" / "node_modules" / ".bin"
_LINE = re.compile(r"^([✓✗]) (\S+): (\d+) passed, (\d+) failed", re.MULTILINE)


def suite_command() -> list[str]:
    suite = NODE_BIN / "conformance"
    if not suite.exists():
        raise AssertionError(f"{suite} is missing: run ./scripts/setup-lab (it calls scripts/node-tools)")
    return [str(NODE_BIN / "node"), str(suite)]


async def run_suite(url: str, workdir: Path, *, scenario: str | None = None) -> dict[str, bool]:
    """Every active server scenario (or one) against `url`: name -> passed. The suite's results go to `workdir`."""
    argv = [*suite_command(), "server", "--url", url]
    if scenario is not None:
        argv += ["--scenario", scenario]
    env = {**os.environ, "PATH": f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    with anyio.fail_after(180):
        done = await anyio.run_process(argv, cwd=workdir, env=env, check=False)
    output = done.stdout.decode(errors="replace")
    outcome = {name: mark == "✓" for mark, name, _, _ in _LINE.findall(output)}
    if not outcome:
        raise AssertionError(f"the conformance suite printed no summary (exit {done.returncode}):\n{output[-2000:]}")
    return outcome


def passing(outcome: dict[str, bool]) -> set[str]:
    return {name for name, ok in outcome.items() if ok}


def main() -> None:
    outcome = anyio.run(run_suite, sys.argv[1], Path.cwd())
    lines = [f"{'pass' if ok else 'FAIL'}  {name}" for name, ok in outcome.items()]
    sys.stdout.write("\n".join([*lines, f"{sum(outcome.values())} of {len(outcome)} scenarios pass", ""]))


if __name__ == "__main__":
    main()
