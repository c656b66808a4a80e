"""A workflow pinned to a driver version older than the current one is planned on the version it pins, and
the plan answer says so, with what to change (issue 37: "the outdated-driver warning")."""

from pathlib import Path

import pytest

from gateway.hosted.prompts import PromptLibrary
from gateway.store.backends import local_runs
from gateway.think.engine import Engine
from gateway.think.library import Library
from gateway.think.state import StateStore
from gateway.think.validator import Schemas

pytestmark = pytest.mark.anyio

PINNED = """
name: pinned
version: "1"
driver_version: old-2025-01
steps:
  - {id: only, call: local.work, input_template: {}}
"""


def prompts_in(folder: Path, current: str) -> PromptLibrary:
    folder.mkdir()
    (folder / "old.md").write_text("# the old driver\n")
    (folder / "new.md").write_text("# the new driver\n")
    index = f"current: {current}\nversions:\n  old-2025-01: {{file: old.md}}\n  new-2026-01: {{file: new.md}}\n"
    (folder / "prompts.yml").write_text(index)
    return PromptLibrary(folder)


def engine_on(tmp_path: Path, current: str) -> Engine:
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / "pinned.yaml").write_text(PINNED)
    store = StateStore(*local_runs(tmp_path / "state"))
    return Engine(Library([tmp_path / "flows"]), store, prompts_in(tmp_path / "prompts", current), schemas=Schemas([]))


async def test_a_workflow_pinned_to_an_older_driver_is_warned_about_at_plan(tmp_path: Path) -> None:
    answer = await engine_on(tmp_path, "new-2026-01").plan("me", "pinned", {})
    assert answer["step_id"] == "__driver_bootstrap" and answer["input"] == {"version": "old-2025-01"}
    warning = answer["driver_warning"]
    assert "pins driver_version 'old-2025-01'; the current driver is 'new-2026-01'" in warning
    assert "update driver_version" in warning


async def test_a_workflow_pinned_to_the_current_driver_gets_no_warning(tmp_path: Path) -> None:
    answer = await engine_on(tmp_path, "old-2025-01").plan("me", "pinned", {})
    assert "driver_warning" not in answer
