"""The local identities' adoption of runs stored before runs had owners (`LocalRuns._adopt`) never reaches the
gateway's task records: a workflow may be named `tasks`, and the stdio user (an heir) listing or planning it leaves
every identity's tasks where they are. Task records that gateways kept in `<state_dir>/tasks/` move to
`<state_dir>/.tasks/` at start-up; the runs of a workflow named `tasks` stay there for their heir."""

import json
import os
import textwrap
import time
from pathlib import Path

import anyio
import pytest

from gateway.store.local.runs import LocalRuns
from gateway.store.local.tasks import LocalTasks, moved_from
from tests.fronts.test_tasks import as_task, send, tasked
from tests.harness import connected, write_config
from tests.think.harness import body_of

pytestmark = pytest.mark.anyio

TASKS_WORKFLOW = """\
    name: tasks
    version: "1.0"
    description: A workflow whose name is the task store's old folder.
    steps:
      - id: say
        call: prompt.say
        input_template:
          text: "hello"
        capture_as: said
    """


async def test_a_workflow_named_tasks_leaves_the_task_records_alone(tmp_path: Path) -> None:
    folder = tmp_path / "workflows"
    folder.mkdir()
    (folder / "tasks.yaml").write_text(textwrap.dedent(TASKS_WORKFLOW), encoding="utf-8")
    think = {"workflows_dirs": [str(folder)], "state_dir": str(tmp_path / "state")}
    config = write_config(tmp_path, {"t": tasked()}, think=think)
    async with connected(config) as (_, client):  # the in-process client is the stdio user: an heir
        task = await as_task(client, "t.hold", {"key": "w"})
        tid = task["taskId"]
        assert body_of(await client.call_tool("think.state.list", {"workflow": "tasks"}))["runs"] == []
        assert (await send(client, "tasks/get", {"taskId": tid}))["status"] == "working"
        planned = body_of(await client.call_tool("think.plan", {"workflow": "tasks"}))
        assert planned["workflow"] == "tasks"
        assert [t["taskId"] for t in (await send(client, "tasks/list", {}))["tasks"]] == [tid]
        assert not (await client.call_tool("t.release", {"key": "w"})).is_error
        with anyio.fail_after(10):
            result = await send(client, "tasks/result", {"taskId": tid})
        assert result["content"][0]["text"] == "held w released"


async def test_an_heir_adopts_no_folder_of_task_records_nor_one_without_runs(tmp_path: Path) -> None:
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "alice~t1.json").write_text("{}")  # another identity's task, in the old place
    (tmp_path / "empty").mkdir()
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "r1.json").write_text('{"version": 1}')
    (tmp_path / "old" / "~latest.json").write_text('{"version": 1}')
    runs = LocalRuns(tmp_path, heirs=frozenset({"me"}))
    assert await runs.all("me~tasks") == [] and await runs.all("me~empty") == []
    assert len(await runs.all("me~old")) == 2  # a workflow's runs from before owners: adopted
    assert sorted(os.listdir(tmp_path)) == ["empty", "me~old", "tasks"]


def old_record(task_id: str, status: str) -> dict[str, object]:
    return {"taskId": task_id, "status": status, "createdAt": "2026-11-25T00:00:00Z", "expires": time.time() + 60}


async def test_task_records_kept_in_the_old_folder_move_once_and_a_running_one_is_reaped(tmp_path: Path) -> None:
    old, new = tmp_path / "tasks", tmp_path / ".tasks"
    old.mkdir()
    (old / "alice~done.json").write_text(json.dumps({**old_record("done", "completed"), "result": {"content": []}}))
    (old / "alice~running.json").write_text(json.dumps(old_record("running", "working")))
    moved_from(old, new)
    assert not old.exists()  # nothing else was there: the folder goes too
    tasks = LocalTasks(new)
    assert (await tasks.get("alice", "done") or {})["result"] == {"content": []}
    reaped = await tasks.reap("alice", "running", {**old_record("running", "failed"), "statusMessage": "stopped"})
    assert reaped is not None and reaped["status"] == "failed"  # the gateway that ran it wrote to the old folder
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "r1.json").write_text('{"version": 1}')  # a workflow `tasks`'s run from before owners
    (tmp_path / "tasks" / "bob~t.json").write_text(json.dumps(old_record("t", "completed")))
    moved_from(old, new)
    assert [p.name for p in old.iterdir()] == ["r1.json"]
    assert sorted(p.name for p in new.glob("*.json")) == ["alice~done.json", "alice~running.json", "bob~t.json"]
