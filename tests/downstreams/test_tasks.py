"""A server's task-only tool through the gateway (tests/servers/tasked.py speaks 2025-11-25 tasks for real): a
client without tasks gets its final result as a plain call, with each step the server reported as progress; a
task-capable client's task wraps the server's."""

from pathlib import Path

import anyio
import pytest

from tests.fronts.test_tasks import as_task, send, tasked
from tests.harness import connected, http_client, http_gateway, text_of, write_config

pytestmark = pytest.mark.anyio


async def test_a_client_without_tasks_gets_a_task_only_tools_result_as_a_plain_call_with_progress(
    tmp_path: Path,
) -> None:
    events = tmp_path / "events"
    config = write_config(tmp_path, {"t": tasked(events)}, think={"state_dir": str(tmp_path / "s")})
    told: list[str | None] = []

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        told.append(message)

    async with connected(config) as (_, client):
        result = await client.call_tool("t.job", {"steps": 3}, progress_callback=progress)
    assert not result.is_error, text_of(result)
    assert text_of(result) == "job done after 3 steps"
    assert told == ["working", "step 1 of 3", "step 2 of 3", "step 3 of 3"]  # started, then every step once
    assert events.read_text().splitlines() == ["call job task"]  # sent as a task, never as a plain call


async def test_a_task_capable_clients_task_wraps_the_servers_task(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"t": tasked()}, think={"state_dir": str(tmp_path / "s")})
    async with connected(config) as (_, client):
        task = await as_task(client, "t.job", {"steps": 2})
        result = await send(client, "tasks/result", {"taskId": task["taskId"]})
        listed = (await send(client, "tasks/list", {}))["tasks"]
    assert result["content"][0]["text"] == "job done after 2 steps"
    assert [t["taskId"] for t in listed] == [task["taskId"]]  # the gateway's id; the server's stays inside


async def test_a_call_that_is_cancelled_cancels_the_servers_task(tmp_path: Path) -> None:
    events = tmp_path / "events"
    config = write_config(tmp_path, {"t": tasked(events)}, think={"state_dir": str(tmp_path / "s")})
    async with connected(config) as (_, client):
        task = await as_task(client, "t.job", {"steps": 10**9})  # runs as long as it is polled
        await send(client, "tasks/cancel", {"taskId": task["taskId"]})  # answered once the call has stopped
    lines = events.read_text().splitlines()
    assert lines[0] == "call job task" and lines[1].startswith("cancel ") and len(lines) == 2


async def test_a_2026_server_that_runs_a_call_only_as_a_task_is_answered_plainly_with_progress(tmp_path: Path) -> None:
    events = tmp_path / "events"
    entry = {**tasked(events), "protocol": "auto"}  # the server speaks 2026-07-28: the tasks extension
    config = write_config(tmp_path, {"t": entry}, think={"state_dir": str(tmp_path / "s")})
    told: list[str | None] = []

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        told.append(message)

    async with connected(config) as (gateway, client):
        assert gateway.registry.downstreams["t"].protocol_version == "2026-07-28"
        result = await client.call_tool("t.job", {"steps": 2}, progress_callback=progress)
        plain = await client.call_tool("t.big", {"n": 2})
    assert not result.is_error, text_of(result)
    assert text_of(result) == "job done after 2 steps" and text_of(plain) == "xx"
    assert told == ["working", "step 1 of 2", "step 2 of 2"]
    assert events.read_text().splitlines() == ["call job plain", "call job task", "call big plain"]  # refused, task


async def test_every_users_process_of_a_per_user_server_calls_its_task_only_tool_as_a_task(tmp_path: Path) -> None:
    """Only one user's process lists the tools; the others learn from it which run only as tasks."""
    per_user = {**tasked(), "env": {"X": "${user:X}"}}
    tokens = {"ann": "ann-token-0123456789", "bob": "bob-token-0123456789"}
    config = write_config(
        tmp_path,
        {"t": per_user},
        auth={"tokens": [{"name": n, "token": t} for n, t in tokens.items()]},
        secrets={"sources": ["header"]},
        think={"state_dir": str(tmp_path / "s")},
    )

    def who(name: str) -> dict[str, str]:
        return {"authorization": f"Bearer {tokens[name]}", "x-gateway-secret-x": name}

    with anyio.fail_after(60):
        async with http_gateway(config) as base:
            async with http_client(base, mode="legacy", headers=who("ann")) as ann:
                await ann.list_tools()  # ann's process lists the server's tools
            async with http_client(base, mode="legacy", headers=who("bob")) as bob:
                result = await bob.call_tool("t.job", {"steps": 1})  # bob's own process, never listed
    assert text_of(result) == "job done after 1 steps"
