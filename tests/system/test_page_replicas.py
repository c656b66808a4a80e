"""The page of two `gateway serve --http` replicas on one Redis: each replica's calls and counts show from the
other (admin: everyone's; others: their own), a call made on one opens on the other beside what the model got,
its spilled output too, a replica publishes on its own (nobody looking at it) within seconds, and a sign-in at the
page of one holds on the other until a sign-out on either."""

import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import httpx2
import pytest

from tests.fronts.test_page import ALICE, BOB, RULES, bearer, get
from tests.harness import http_client, http_gateways, kitchen, write_config
from tests.services import RedisServer, redis_server

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with redis_server(tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.fixture
async def replicas(tmp_path: Path, redis: RedisServer) -> AsyncIterator[list[str]]:
    tokens = [{"name": "alice", "token": ALICE, "groups": ["ops"]}, {"name": "bob", "token": BOB, "groups": ["dev"]}]
    config = write_config(
        tmp_path,
        {"k": kitchen("k")},
        auth={"tokens": tokens, "admin_groups": ["ops"]},
        policy={"rules": RULES},
        store={"backend": "redis", "url": redis.url, "prefix": f"{tmp_path.name[-20:]}:"},
        limits={"max_inline_bytes": 2000, "outputs_dir": str(tmp_path / "outputs")},
        think={"state_dir": str(tmp_path / "think")},
    )
    async with http_gateways(config, config) as bases:
        yield bases


def rows(text: str) -> list[tuple[str, str]]:
    """(ref, tool) of each call in the tail, newest first."""
    return [
        (ref, re.findall(r"<td>(.*?)</td>", body)[3])
        for ref, body in re.findall(r'<tr data-call="([0-9a-f]+-\d+)"[^>]*>(.*?)</tr>', text, re.S)
    ]


async def call(base: str, token: str, tool: str, **arguments: object) -> None:
    async with http_client(base, headers=bearer(token)) as client:
        await client.call_tool(tool, arguments)


async def test_a_call_on_one_replica_shows_and_opens_on_the_other(replicas: list[str]) -> None:
    a, b = replicas
    await call(a, ALICE, "k.echo", text="made on a")
    await call(a, ALICE, "k.blob", n=30_000)
    await call(b, BOB, "k.echo", text="bob on b")
    await get(a, "/ui/calls")  # a's page publishes what a recorded (no waiting on its timer)
    seen = rows((await get(b, "/ui/calls")).text)
    assert [tool for _, tool in seen] == ["k.echo", "k.blob", "k.echo"]  # b's own, then a's two
    replica_of = {ref.split("-")[0] for ref, _ in seen}
    assert len(replica_of) == 2
    echo_a = seen[2][0]
    opened = (await get(b, f"/ui/calls/{echo_a}")).text
    assert "made on a" in opened and 'data-kind="bootstrap"' in opened
    spilled = (await get(b, f"/ui/calls/{seen[1][0]}")).text  # the output a spilled, read through b
    assert re.search(r'<pre id="stored-text">x{1000}', spilled) is not None
    assert [tool for _, tool in rows((await get(a, "/ui/calls", token=BOB)).text)] == ["k.echo"]  # bob's own
    assert (await get(a, f"/ui/calls/{echo_a}", token=BOB)).status_code == 404  # alice's


async def test_every_replicas_counts_show_on_the_metrics_tab(replicas: list[str]) -> None:
    a, b = replicas
    await call(a, ALICE, "k.echo", text="1")
    await call(a, BOB, "k.boom")  # refused by the policy: an error
    await call(b, ALICE, "k.echo", text="2")
    await get(a, "/ui/metrics")
    text = (await get(b, "/ui/metrics")).text
    counted = re.findall(r'<tr data-replica="([0-9a-f]+)"><td>[^<]*</td><td>(\d+)</td><td[^>]*>(\d+)</td>', text)
    assert sorted((calls, errors) for _, calls, errors in counted) == [("1", "0"), ("2", "1")]
    echo = re.search(r'<tr data-tool="k.echo">(.*?)</tr>', text, re.S)
    assert echo is not None and re.findall(r"<td[^>]*>(.*?)</td>", echo.group(1))[2] == "2"  # both replicas'


async def test_a_replica_publishes_its_calls_without_being_looked_at(replicas: list[str]) -> None:
    a, b = replicas
    await call(a, ALICE, "k.measure", text="abc")
    # Nobody asks a; its publisher puts the call within about a second. Another process: polled, bounded.
    with anyio.fail_after(20):
        while "k.measure" not in (await get(b, "/ui/calls")).text:  # noqa: ASYNC110 -- another process
            await anyio.sleep(0.1)


async def test_a_sign_in_on_one_replica_holds_on_the_other_until_a_sign_out_on_either(replicas: list[str]) -> None:
    a, b = replicas
    async with httpx2.AsyncClient(timeout=30) as http:
        signed = await http.post(a + "/ui/login", data={"token": BOB})
        assert signed.status_code == 303
        cookie = {"Cookie": f"gateway_page={signed.cookies['gateway_page']}"}
        on_b = await http.get(b + "/ui/calls", headers=cookie)
        assert on_b.status_code == 200 and "bob · read-only" in on_b.text
        assert (await http.post(b + "/ui/logout", headers=cookie)).status_code == 303
        assert (await http.get(a + "/ui/calls", headers=cookie)).status_code == 401
        assert (await http.get(b + "/ui/calls", headers=cookie)).status_code == 401
