"""Workflow files that do not load, in listings: seed 002 keeps the list lean, so a compact or standard listing
names them (a count and names), and only detailed mode (or think.validate) carries each one's problems."""

import json
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest

from tests.think.harness import body_of, gateway_on

pytestmark = pytest.mark.anyio

GOOD = """\
name: {name}
version: "1"
description: A workflow that loads.
tags: [ok]
steps:
  - {{id: a, call: prompt.say, input_template: {{text: hi}}}}
"""
BROKEN = """\
name: {name}
version: "1"
tasks: {{}}
steps:
  - {{id: a, call: prompt.say, agent: worker, colour: blue, input_template: {{text: "{{{{ nowhere }}}}"}}}}
limits: {{max_stderr_bytes: 1, cleanup_strategy: fifo}}
"""


async def test_seventeen_broken_files_add_a_count_and_names_not_their_diagnostics(tmp_path: Path) -> None:
    workflows = {f"good_{i}_v1": GOOD.format(name=f"good_{i}_v1") for i in range(2)}
    workflows |= {f"broken_{i:02}_v1": BROKEN.format(name=f"broken_{i:02}_v1") for i in range(17)}
    async with gateway_on(tmp_path, workflows) as client:

        async def listing(**args: Any) -> dict[str, Any]:
            return body_of(await client.call_tool("think.workflows.list", args))

        compact, standard, detailed = [await listing(mode=m) for m in ("compact", "standard", "detailed")]
        filtered = await listing(filter="broken_01")
        tagged = await listing(tags=["ok"])
        (resource,) = (await client.read_resource("workflow://list")).contents
    names = [f"broken_{i:02}_v1" for i in range(17)]
    assert compact["invalid"] == {
        "count": 17,
        "names": names,
        "guidance": "think.validate {workflow: <name>} lists a file's problems (or list with mode detailed).",
    }
    assert standard["invalid"] == compact["invalid"]
    # 19.6 KB of diagnostics before; now the two-result compact list stays small
    assert len(json.dumps(compact)) < 1_200
    assert detailed["invalid"]["count"] == 17 and len(detailed["invalid"]["details"]) == 17
    assert all(d["error"] == "YAML_SCHEMA_VIOLATION" for d in detailed["invalid"]["details"])
    assert filtered["invalid"]["names"] == ["broken_01_v1"] and filtered["count"] == 0
    assert "invalid" not in tagged and tagged["count"] == 2  # a file that does not load has no tags to match
    assert isinstance(resource, types.TextResourceContents)
    assert json.loads(resource.text)["invalid"] == compact["invalid"]


async def test_more_broken_files_than_names_shown_are_counted(tmp_path: Path) -> None:
    workflows = {f"broken_{i:02}_v1": BROKEN.format(name=f"broken_{i:02}_v1") for i in range(25)}
    async with gateway_on(tmp_path, workflows) as client:
        compact = body_of(await client.call_tool("think.workflows.list", {}))
    assert compact["invalid"]["count"] == 25 and len(compact["invalid"]["names"]) == 20
