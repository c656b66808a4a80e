"""What a Think run and a 2026-era session keep is seen by every replica: three gateways on one Redis, each with
its own state folder (as on separate hosts), behind HAProxy, which tells them the client's own connection.

Proven: a big observed result captured on one replica is read whole by a later step's template rendered on
another; through the balancer (HAProxy, or the published nginx config) a 2026-era client gets the driver bootstrap
exactly once across replicas and its connections (another client name: its own), a Think step's real result is
observed by whichever replica serves its call, and a tool found on one replica is listed by all, on the client's
later connections too (exposure mode `search`); with Redis down each replica says so once.
"""

from collections.abc import Iterator
from typing import Any

import anyio
import anyio.to_thread
import mcp.types as types
import pytest
from mcp import Client

from gateway.session import ANONYMOUS
from gateway.store.base import owned
from tests.balancers import nginx
from tests.deployment import Deployment, deployed
from tests.harness import hints_of, http_client, text_of
from tests.services import need
from tests.system.test_replicas import SNAPSHOTS, call, echoes

pytestmark = pytest.mark.anyio

SPILL = """
name: spill_v1
version: "1"
description: A big observed result, read whole by a later step's template.
steps:
  - id: big
    call: kitchen.blob
    input_template: {n: 30000, char: "é"}
    capture_as: big
  - id: other
    call: local.note
    input_template: {}
  - id: use
    call: local.note
    deps: [big, other]
    input_template: {chars: "{{ big.text | length }}", tail: "{{ big.text[-3:] }}"}
"""
ECHOES = """
name: echoes_v1
version: "1"
description: Three calls through the gateway, each observed.
steps:
  - {id: e1, call: kitchen.echo, input_template: {text: "one"}}
  - {id: e2, call: kitchen.echo, deps: [e1], input_template: {text: "two"}}
  - {id: e3, call: kitchen.echo, deps: [e2], input_template: {text: "three"}}
"""


@pytest.fixture(scope="module")
def deploy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    workflows = {"spill_v1": SPILL, "echoes_v1": ECHOES}
    think = {"state_dir": "${REPLICA_DIR}/state"}  # each replica its own disk, as on separate hosts
    listen = {"forwarded_client_header": "X-Forwarded-Client"}  # HAProxy sets it (tests/services.py)
    exposure = {"mode": "search"}  # found tools join the session's list
    with deployed(tmp_path_factory, workflows, think=think, listen=listen, exposure=exposure) as running:
        yield running


async def think(client: Client, tool: str, workflow: str, **arguments: Any) -> dict[str, Any]:
    result = await call(client, f"think.{tool}", workflow=workflow, **arguments)
    assert not result.is_error, text_of(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def past_driver(client: Client, workflow: str, answer: dict[str, Any]) -> dict[str, Any]:
    """Report the driver steps Think puts first; the first instruction of the workflow's own steps."""
    while answer["step_id"].startswith("__driver"):
        snapshot = SNAPSHOTS[answer["step_id"]]
        answer = await think(
            client, "next", workflow, run_id=answer["run_id"], step_id=answer["step_id"], result_snapshot=snapshot
        )
    return answer


async def test_a_big_result_captured_on_one_replica_is_read_whole_by_a_template_rendered_on_another(
    deploy: Deployment,
) -> None:
    async with http_client(deploy.replicas[0].url) as a, http_client(deploy.replicas[1].url) as b:
        answer = await past_driver(a, "spill_v1", await think(a, "plan", "spill_v1", run_id="spilled"))
        assert answer["step_id"] == "big"
        blob = await call(a, "kitchen.blob", **answer["input"])  # 60 KB: over the capture limit (50 KB)
        assert any("recorded by the gateway" in h for h in hints_of(blob)), hints_of(blob)
        answer = await think(a, "next", "spill_v1", run_id="spilled", step_id="big")  # captured on replica 0
        assert answer["step_id"] == "other"
        # Replica 1 completes `other`, which makes `use` ready: its template is rendered there.
        answer = await think(b, "next", "spill_v1", run_id="spilled", step_id="other", result_snapshot={"ok": True})
    assert answer["step_id"] == "use"
    assert answer["input"] == {"chars": 30_000, "tail": "ééé"}  # the whole value, not the 50 KB preview
    captured = next(c for c in answer["context"] if c["capture"] == "big")
    folder = owned(ANONYMOUS.owner, "spill_v1")  # the run is its planner's: anonymous HTTP
    assert f"spill:{folder}:spilled" in captured["file_path"]  # where the whole value is: the Redis hash
    assert not list(deploy.folder.glob("replica*/state"))  # in Redis, and nothing else on any replica's disk


@pytest.fixture(scope="module")
def balancers(deploy: Deployment) -> Iterator[dict[str, str]]:
    """The deployment's HAProxy, and the published nginx config in front of the same replicas."""
    need("nginx")
    with nginx(deploy.folder / "nginx", [r.port for r in deploy.replicas]) as port:
        yield {"haproxy": deploy.balancer, "nginx": f"http://127.0.0.1:{port}"}


@pytest.mark.parametrize("balancer", ["haproxy", "nginx"])
async def test_a_2026_client_gets_the_driver_bootstrap_once_across_replicas(
    deploy: Deployment, balancers: dict[str, str], balancer: str
) -> None:
    before = echoes(deploy)
    app = types.Implementation(name=f"app-{balancer}", version="1")  # each run its own client: its first contact
    async with http_client(balancers[balancer], client_info=app) as client:
        results = [await call(client, "kitchen.echo", text=f"b{n}") for n in range(6)]
    served = [after - b for after, b in zip(echoes(deploy), before, strict=True)]
    assert all(s >= 1 for s in served), served  # every replica served some of them
    assert [driven(r) for r in results] == [True, False, False, False, False, False]
    async with http_client(balancers[balancer], client_info=app) as again:  # the same client, another connection
        assert [driven(await call(again, "kitchen.echo", text=f"a{n}")) for n in range(3)] == [False, False, False]
    other = types.Implementation(name=f"other-{balancer}", version="1")
    async with http_client(balancers[balancer], client_info=other) as client:  # another client: its own driver
        assert driven(await call(client, "kitchen.echo", text="x"))


def driven(result: types.CallToolResult) -> bool:
    return any(h.startswith("[gateway] Driver ") for h in hints_of(result))


async def test_a_think_steps_call_is_observed_by_whichever_replica_serves_it(deploy: Deployment) -> None:
    before = echoes(deploy)
    async with http_client(deploy.balancer) as client:
        answer = await past_driver(client, "echoes_v1", await think(client, "plan", "echoes_v1", run_id="roaming"))
        while not answer.get("done"):
            echoed = await call(client, answer["call"], **answer["input"])
            assert any("recorded by the gateway" in h for h in hints_of(echoed)), hints_of(echoed)
            # No result_snapshot: the step is complete only because the gateway observed its call.
            answer = await think(client, "next", "echoes_v1", run_id="roaming", step_id=answer["step_id"])
    served = [after - b for after, b in zip(echoes(deploy), before, strict=True)]
    # The plan was served by one replica: with the calls on two or more, one was observed on another replica.
    assert sum(served) == 3 and sum(s >= 1 for s in served) >= 2, served


async def listed(client: Client) -> set[str]:
    return {t.name for t in (await client.list_tools(cache_mode="bypass")).tools}


async def test_a_tool_found_on_one_replica_is_listed_by_every_replica(deploy: Deployment) -> None:
    finder = types.Implementation(name="finder", version="1")  # a client of its own: nothing found before
    async with http_client(deploy.balancer, client_info=finder) as client:
        assert "kitchen.blob" not in await listed(client)
        found = await call(client, "gateway.find_tools", query="blob", limit=1)
        assert "kitchen.blob" in text_of(found)
        # Round robin: the next three lists come from three replicas, the finder among them.
        assert all(["kitchen.blob" in await listed(client) for _ in range(3)])
    async with http_client(deploy.balancer, client_info=finder) as again:  # the same client, a new connection
        assert all(["kitchen.blob" in await listed(again) for _ in range(3)])


async def test_through_nginx_a_request_over_its_default_body_limit_reaches_the_gateway(
    balancers: dict[str, str],
) -> None:
    async with http_client(balancers["nginx"]) as client:
        measured = await call(client, "kitchen.measure", text="y" * 2_000_000)  # nginx's default refuses > 1 MB
    assert text_of(measured) == "received 2000000 chars"


async def test_with_redis_down_each_replica_says_so_once_not_on_every_call(deploy: Deployment) -> None:
    """The issue: a WARNING per 2026-era call for 5 s after a Redis failure, ~190 lines per replica in 4 s."""
    await anyio.to_thread.run_sync(deploy.redis.stop)
    try:
        async with http_client(deploy.balancer) as client:
            for n in range(30):  # ten calls per replica, each reading the session's runs
                assert text_of(await call(client, "kitchen.echo", text=f"d{n}")) == f"d{n}"
    finally:
        await anyio.to_thread.run_sync(deploy.redis.start)
    lines = [[line for line in r.log().splitlines() if "session state:" in line] for r in deploy.replicas]
    assert [len(found) for found in lines] == [1, 1, 1], lines
