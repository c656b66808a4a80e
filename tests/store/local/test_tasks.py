"""Task records in files (`store/local/tasks.py`): a file per task under `<state>/.tasks/`, whose ttl is read by the
gateway itself, so an owner's expired records go when it next creates one (Redis expires its keys itself)."""

from pathlib import Path

import anyio
import pytest

from tests.store.conftest import Backend
from tests.store.test_tasks import ROOMY, opened, task

pytestmark = pytest.mark.anyio


async def test_local_records_of_an_owner_that_never_fetches_them_go_when_it_creates_another(tmp_path: Path) -> None:
    backend = Backend("local", "", "t:", tmp_path)  # Redis expires its keys itself
    async with opened(backend) as tasks:
        await tasks.create("alice", "old", task("old"), 0.05, alive_s=60, caps=ROOMY)
        await anyio.sleep(0.1)  # the ttl is the clock itself
        await tasks.create("alice", "new", task("new"), 60, alive_s=60, caps=ROOMY)
    assert [p.name.split("~")[1] for p in (backend.folder / "state" / ".tasks").glob("*.json")] == ["new.json"]
