"""`gateway check` (a real subprocess) on the response pipeline's config: steering rules and version checks.

Each broken rule is named with the file and its key path; YAML 1.1's bare `on:` / `off` are read as meant.
"""

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from tests.harness import ROOT

pytestmark = pytest.mark.anyio

SERVER = "servers:\n  k: {transport: stdio, command: python3}\n"
CATALOG = "  catalogs:\n    stacks: {source: {type: file, path: stacks.json}}\n"


async def check(tmp_path: Path, text: str) -> tuple[Path, subprocess.CompletedProcess[bytes]]:
    path = tmp_path / "gateway.yaml"
    path.write_text(text, encoding="utf-8")
    with anyio.fail_after(60):
        done = await anyio.run_process(
            [sys.executable, "-m", "gateway", "check", "--config", str(path)],
            cwd=str(ROOT),
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            check=False,
        )
    return path, done


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            SERVER
            + "steering:\n  hints:\n"
            + "    - {tools: [k.echo], on: sometimes, text: Next}\n"
            + "    - {tools: [], text: Next}\n"
            + "versions:\n"
            + CATALOG
            + "  checks:\n    - {catalog: stacks, pattern: '([a-z]+@'}\n"
            + "    - {catalog: stacks, pattern: '([a-z]+)@\\d+'}\n",
            [
                "steering.hints[0].on: Input should be 'success', 'error', 'empty', 'truncated' or 'any'",
                "steering.hints[1].tools: List should have at least 1 item after validation, not 0",
                "versions.checks[0].pattern: not a valid regex: missing ), unterminated subpattern at position 0",
                "versions.checks[1].pattern: needs exactly 2 groups (name, version), has 1",
            ],
            id="steering-rules-and-patterns",
        ),
        pytest.param(
            SERVER
            + "bootstrap: {mode: off}\n"
            + "steering:\n  hints:\n    - {tools: ['k.*'], on: error, text: Retry once}\n"
            + "versions:\n"
            + CATALOG
            + "  checks:\n    - {catalog: stacks}\n    - {catalog: stackz, tools: ['k.*']}\n    - {catalog: nope}\n",
            [
                "versions.checks[1].catalog: 'stackz' is not defined under versions.catalogs (defined: stacks)",
                "versions.checks[2].catalog: 'nope' is not defined under versions.catalogs (defined: stacks)",
            ],
            id="undefined-catalogs",  # and nothing about the bare `on:` / `off`
        ),
        pytest.param(
            SERVER + "versions:\n  catalogs:\n    live: {source: {type: http}, ttl_s: 0}\n",
            [
                "versions.catalogs.live.source: a 'http' source needs `url`",
                "versions.catalogs.live.ttl_s: Input should be greater than 0",
            ],
            id="catalog-source",
        ),
    ],
)
async def test_check_names_each_broken_rule_with_file_and_key_path(
    tmp_path: Path, text: str, expected: list[str]
) -> None:
    path, done = await check(tmp_path, text)
    assert done.returncode == 1
    assert sorted(done.stderr.decode().splitlines()) == sorted(f"{path}: {problem}" for problem in expected)


async def test_check_accepts_hand_written_steering_and_versions(tmp_path: Path) -> None:
    text = (
        SERVER
        + "bootstrap: {mode: off}\n"
        + "steering:\n  hints:\n    - {tools: [k.echo], on: success, text: 'Next: call k.measure.'}\n"
        + "versions:\n"
        + CATALOG
        + "  checks:\n    - {catalog: stacks, tools: ['k.*'], scan: [arguments]}\n"
    )
    _, done = await check(tmp_path, text)
    assert done.returncode == 0, done.stderr.decode()
