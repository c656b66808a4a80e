"""Three gateway replicas on one Redis behind HAProxy (round-robin), all real processes.

Proven: a Think run planned on one replica continues on the others; a spilled output is paged through any
replica; a version catalog is fetched once for all replicas; 2026-era calls need no affinity; 2025-era
sessions stay on their replica and, when it dies, the client gets a clear error at once and re-initialises;
a replica killed mid-run loses nothing; Redis stopped gives clear errors and, restarted, the run goes on.
"""

import json
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx2
import mcp.types as types
import pytest
from mcp import Client, MCPError

from tests.balancers import checked, haproxy_config, in_rotation, nginx_argv, nginx_files, readme_block
from tests.deployment import Deployment, deployed
from tests.harness import ROOT, hints_of, http_client, text_of
from tests.services import need

pytestmark = pytest.mark.anyio

OPERATIONS = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")

WORKFLOW = """
name: relay_v1
version: "1"
description: Three steps for the replica tests.
steps:
  - id: first
    call: kitchen.echo
    input_template: {text: "one"}
    capture_as: first
  - id: second
    call: local.note
    input_template: {after: "{{ first.text }}"}
    capture_as: second
  - id: third
    call: local.note
    input_template: {}
"""
SNAPSHOTS: dict[str, Any] = {
    "__driver_bootstrap": {"version": "stable-2025-11", "text": "the driver"},
    "__driver_announce": {"message": "ok"},
    "first": {"text": "one"},
    "second": {"ok": True},
    "third": {"ok": True},
}


@pytest.fixture(scope="module")
def deploy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    with deployed(tmp_path_factory, {"relay_v1": WORKFLOW}, limits={"max_inline_bytes": 2000}) as running:
        yield running


@pytest.fixture
async def everyone(deploy: Deployment) -> Deployment:
    """The deployment with all replicas up (a test that killed one leaves it down: restarting costs seconds)."""
    for replica in deploy.replicas:
        if replica.process is None:
            await anyio.to_thread.run_sync(deploy.restart, replica)
    return deploy


@pytest.fixture
async def clients(everyone: Deployment) -> AsyncIterator[list[Client]]:
    """One client per replica, straight to it (no balancer): the test picks which replica serves each call."""
    async with AsyncExitStack() as stack:
        yield [await stack.enter_async_context(http_client(r.url)) for r in everyone.replicas]


async def call(client: Client, tool: str, **arguments: Any) -> types.CallToolResult:
    with anyio.fail_after(30):
        return await client.call_tool(tool, arguments)


async def think(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await call(client, f"think.{tool}", workflow="relay_v1", **arguments)
    assert not result.is_error, text_of(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def step(client: Client, run_id: str, answer: dict[str, Any]) -> dict[str, Any]:
    """Complete the instructed step with its snapshot; the next instruction (or the summary)."""
    return await think(
        client, "next", run_id=run_id, step_id=answer["step_id"], result_snapshot=SNAPSHOTS[answer["step_id"]]
    )


async def test_a_think_run_planned_on_one_replica_continues_on_the_others(clients: list[Client]) -> None:
    answer = await think(clients[0], "plan", run_id="across")
    turn = 1
    while not answer.get("done"):
        answer = await step(clients[turn % 3], "across", answer)
        turn += 1
    assert turn == 6 and answer["progress"] == {"done": 5, "total": 5}
    state = (await think(clients[2], "state.get", run_id="across"))["state"]
    assert state["status"] == "done" and state["version"] == 6  # plan + five steps, each saved once


async def test_a_spilled_output_is_paged_through_any_replica(clients: list[Client]) -> None:
    result = await call(clients[0], "kitchen.blob", n=30_000, char="é")
    found = re.search(r"stored as ([0-9a-f]{24})", " ".join(hints_of(result)) + text_of(result))
    assert found is not None, result
    pages: list[str] = []
    offset = 0
    while True:  # each page from the next replica
        page = await call(clients[(len(pages) + 1) % 3], "gateway.read_output", id=found[1], offset=offset)
        assert not page.is_error, text_of(page)
        header, _, body = text_of(page).partition("\n")
        pages.append(body)
        more = re.search(r'"offset": (\d+)', header)
        if more is None:
            break
        offset = int(more[1])
    assert "".join(pages) == "é" * 30_000 and len(pages) >= 3


async def test_a_version_catalog_is_fetched_once_for_all_replicas(deploy: Deployment, clients: list[Client]) -> None:
    answers: list[types.CallToolResult] = []

    async def echo(client: Client) -> None:
        answers.append(await call(client, "kitchen.echo", text="which versions?"))

    async with anyio.create_task_group() as tg:  # all three at once: they race for the load
        for client in clients:
            tg.start_soon(echo, client)
    assert all(any("Live versions (stacks)" in h for h in hints_of(a)) for a in answers)
    # Once in all, whichever test called first (the catalog is cached for its TTL, an hour).
    assert sum(r.events("catalog").count("call list_versions") for r in deploy.replicas) == 1


def echoes(deploy: Deployment) -> list[int]:
    return [r.events("kitchen").count("call echo") for r in deploy.replicas]


async def test_2026_era_calls_need_no_affinity(everyone: Deployment) -> None:
    deploy = everyone
    before = echoes(deploy)
    async with http_client(deploy.balancer) as client:
        for n in range(6):
            assert text_of(await call(client, "kitchen.echo", text=f"n{n}")) == f"n{n}"
    served = [after - b for after, b in zip(echoes(deploy), before, strict=True)]
    assert sum(served) == 6 and all(s >= 1 for s in served), served  # every replica took some of them


async def test_2025_era_sessions_stick_to_their_replica_and_reinitialise_cleanly_when_it_dies(
    everyone: Deployment,
) -> None:
    deploy = everyone
    before = echoes(deploy)
    async with http_client(deploy.balancer, mode="legacy") as client:
        for n in range(4):
            assert text_of(await call(client, "kitchen.echo", text=f"s{n}")) == f"s{n}"
        served = [after - b for after, b in zip(echoes(deploy), before, strict=True)]
        assert sorted(served) == [0, 0, 4], served  # the session stayed on one replica
        await anyio.to_thread.run_sync(deploy.kill, deploy.replicas[served.index(4)])
        with anyio.fail_after(10), pytest.raises(MCPError) as caught:  # an answer within HAProxy's retries
            await client.call_tool("kitchen.echo", {"text": "after"})
        said = caught.value.message
        assert said == "Session not found" and f'(HTTP 404, "{said}", after about a second' in OPERATIONS

    async with http_client(deploy.balancer, mode="legacy") as fresh:  # what the client does next: initialise again
        assert text_of(await call(fresh, "kitchen.echo", text="again")) == "again"


async def test_a_replica_killed_mid_run_loses_nothing_and_the_run_completes(deploy: Deployment) -> None:
    async with http_client(deploy.balancer) as client:
        answer = await think(client, "plan", run_id="survivor")
        answer = await step(client, "survivor", answer)
        victim = next(r for r in deploy.replicas if r.process is not None)
        await anyio.to_thread.run_sync(deploy.kill, victim)
        while not answer.get("done"):  # HAProxy retries a refused connection on another replica
            answer = await step(client, "survivor", answer)
        assert answer["progress"] == {"done": 5, "total": 5}


async def test_redis_down_gives_clear_errors_and_after_its_restart_the_run_goes_on(deploy: Deployment) -> None:
    async with http_client(deploy.balancer) as client:
        answer = await think(client, "plan", run_id="outage")
        await anyio.to_thread.run_sync(deploy.redis.stop)
        try:
            with anyio.fail_after(20):
                failed = await call(
                    client,
                    "think.next",
                    workflow="relay_v1",
                    run_id="outage",
                    step_id=answer["step_id"],
                    result_snapshot=SNAPSHOTS[answer["step_id"]],
                )
            body = json.loads(text_of(failed))
            assert failed.is_error and body["error"] == "STORE_UNAVAILABLE"
            assert f":{deploy.redis.port}/0" in body["details"] and "Nothing was changed" in body["details"]
            # calls that need no store still work; a big result is previewed, not stored; catalogs load locally
            echoed = await call(client, "kitchen.echo", text="still")
            assert text_of(echoed) == "still" and any("Live versions (stacks)" in h for h in hints_of(echoed))
            big = await call(client, "kitchen.blob", n=30_000)
            assert not big.is_error and "could not be kept (the store is unavailable)" in " ".join(hints_of(big))
        finally:
            await anyio.to_thread.run_sync(deploy.redis.start)
        while not answer.get("done"):  # the planned run survived in Redis's append-only file
            answer = await step(client, "outage", answer)
        assert answer["progress"] == {"done": 5, "total": 5}


def test_the_readmes_balancer_configs_pass_their_own_syntax_checks(tmp_path: Path) -> None:
    """As printed (operators copy them) and as the tests run them; `haproxy -c` used to warn of missing timeouts."""
    for name, text in {"as-printed": readme_block("haproxy"), "as-run": haproxy_config(8080, [9000, 9001])}.items():
        (tmp_path / f"{name}.cfg").write_text(text, encoding="utf-8")
        checked([need("haproxy"), "-c", "-f", str(tmp_path / f"{name}.cfg")])
    assert "syntax is ok" in checked(nginx_argv(nginx_files(tmp_path / "as-printed", None, None), "-t"))
    assert "syntax is ok" in checked(nginx_argv(nginx_files(tmp_path / "as-run", 8080, [9000, 9001]), "-t"))


async def test_the_balancers_health_check_passes_quietly_with_allowed_hosts_naming_only_the_balancer(
    deploy: Deployment,
) -> None:
    """The deployment accepts only the Host clients use for the balancer (127.0.0.1); the published check sends its
    own, once a second per replica: each used to log "Invalid Host header"."""
    found = re.search(r"hdr Host (\S+)", readme_block("haproxy"))
    assert found is not None and not found[1].startswith("127.0.0.1")
    running = [(f"g{i}", r) for i, r in enumerate(deploy.replicas) if r.process is not None]
    async with httpx2.AsyncClient(timeout=5) as http:
        for _, replica in running:
            answer = await http.get(f"{replica.url}/healthz", headers={"host": found[1]})
            assert answer.status_code == 200 and set(answer.json()) == {"status"}  # bare: no details
    assert all(in_rotation(deploy.folder)[name] == "UP" for name, _ in running)
    assert not [r.folder.name for r in deploy.replicas if "Invalid Host header" in r.log()]
