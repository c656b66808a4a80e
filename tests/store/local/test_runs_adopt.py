"""The local identities' adoption of runs stored before runs had owners (`LocalRuns._adopt`) never reaches the
gateway's task records: a workflow may be named `tasks`, and the stdio user (an heir) listing or planning it leaves
every identity's tasks where they are."""

import textwrap
from pathlib import Path

import anyio
import pytest

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
