"""An in-process Think engine on a real local state folder, for the tests of its parts (engine, transitions, runner,
ops): no gateway, no client; the driver's two steps answered so a test starts at the workflow's own first step."""

import textwrap
from pathlib import Path
from typing import Any

from gateway.hosted.prompts import PromptLibrary
from gateway.store.backends import local_runs
from gateway.think.engine import Engine
from gateway.think.library import Library
from gateway.think.state import StateStore
from gateway.think.validator import Schemas

OWNER = "tester"
DRIVER = {"version": "stable-2025-11", "text": "the driver"}


def engine_on(tmp_path: Path, workflows: dict[str, str], schemas: Path | None = None) -> Engine:
    folder = tmp_path / "workflows"
    folder.mkdir(exist_ok=True)
    for name, text in workflows.items():
        (folder / f"{name}.yaml").write_text(textwrap.dedent(text), encoding="utf-8")
    store = StateStore(*local_runs(tmp_path / "state"))
    return Engine(Library([folder]), store, PromptLibrary(), schemas=Schemas([schemas] if schemas else []))


async def past_driver(engine: Engine, workflow: str, ins: dict[str, Any]) -> dict[str, Any]:
    """Answer the injected driver steps; the first instruction of the workflow's own."""
    while not ins["done"] and ins["step_id"].startswith("__driver"):
        ins = await engine.next(OWNER, workflow, ins["run_id"], ins["step_id"], DRIVER)
    return ins


async def planned(engine: Engine, workflow: str, params: dict[str, Any] | None = None, run_id: str = "r") -> Any:
    return await past_driver(engine, workflow, await engine.plan(OWNER, workflow, params or {}, run_id))
