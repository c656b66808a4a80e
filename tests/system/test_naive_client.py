"""Acceptance: a client that ignores every instruction still gets steered.

A scripted naive client opens a fresh session on the real stdio front (the gateway as a subprocess), never
reads the instructions, never lists tools, never calls think.* or gateway.*: its very first call is a
downstream tool with a version that does not exist. That one response must carry everything it needs:
the driver summary, the version warning and the configured next step, each as its own `[gateway]` block
and mirrored in `_meta["gateway/hints"]`.
"""

import json
from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.harness import KITCHEN, PYTHON, gateway_params, hints_of, text_of

pytestmark = pytest.mark.anyio

NEXT = "Next: call k.measure to confirm the size."


def write_hand_config(tmp_path: Path) -> Path:
    """Written as a person would (bare `on:`, a catalog path relative to the config file)."""
    (tmp_path / "stacks.json").write_text(
        json.dumps({"bun": ["1.1.34", "1.2"], "nodejs": ["18", "20", "22"], "postgresql": ["16"]}), encoding="utf-8"
    )
    path = tmp_path / "gateway.yaml"
    path.write_text(
        f"""\
servers:
  k:
    transport: stdio
    command: {json.dumps(PYTHON)}
    args: [{json.dumps(KITCHEN)}, --name, k]
steering:
  hints:
    - {{tools: [k.echo], on: success, text: "{NEXT}"}}
versions:
  catalogs:
    stacks:
      source: {{type: file, path: stacks.json}}
  checks:
    - {{catalog: stacks, tools: ["k.*"], scan: [arguments]}}
""",
        encoding="utf-8",
    )
    return path


async def test_the_first_call_of_a_naive_client_carries_driver_version_warning_and_next_step(tmp_path: Path) -> None:
    config = write_hand_config(tmp_path)
    with anyio.fail_after(60):
        async with Client(gateway_params(config)) as client:
            first = await client.call_tool("k.echo", {"text": "deploy with bun@1"})
            second = await client.call_tool("k.echo", {"text": "deploy with bun@1.2"})

    assert not first.is_error
    assert text_of(first) == "deploy with bun@1"  # the tool's own answer is untouched
    driver, versions, steering = hints_of(first)  # three blocks, in pipeline order
    assert driver.startswith("[gateway] Driver stable-2025-11 (sha256:")
    assert "think.plan" in driver  # the loop itself, not just a pointer to it
    assert versions.startswith("[gateway] Version check\n")
    assert "⚠ bun@1 — not found. Available: bun@1.1.34, bun@1.2. Use bun@1.2" in versions
    assert steering == f"[gateway] {NEXT}"
    mirrored = (first.meta or {})["gateway/hints"]
    assert [h["kind"] for h in mirrored] == ["bootstrap", "version_check", "steering"]
    assert [f"[gateway] {h['text']}" for h in mirrored] == [driver, versions, steering]

    # The driver rides on the first result only; the other steering keeps coming.
    assert text_of(second) == "deploy with bun@1.2"
    assert hints_of(second) == ["[gateway] Version check\n✓ bun@1.2 — valid", f"[gateway] {NEXT}"]
    assert [h["kind"] for h in (second.meta or {})["gateway/hints"]] == ["version_check", "steering"]
