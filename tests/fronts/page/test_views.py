"""What each tab of the page shows (`fronts/page/views.py`), worked out from a real gateway in this process (the
kitchen server running, a server whose command cannot start, a policy rule, recorded calls): the servers at a glance,
whose listing the catalog shows and why a tool is hidden, a tool's try form, whose calls and arguments a viewer sees."""

from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client

from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.fronts.page import views
from gateway.session import Identity
from tests.harness import connected, kitchen, write_config

pytestmark = pytest.mark.anyio

ALICE = Identity("alice", "static", "alice", groups=frozenset({"ops"}))
BOB = Identity("bob", "static", "bob", groups=frozenset({"dev"}))


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module-scoped: `running` is


@pytest.fixture(scope="module")
async def running(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Gateway, Client]]:
    folder = tmp_path_factory.mktemp("views")
    tokens = [{"name": "alice", "token": "a" * 24, "groups": ["ops"]}, {"name": "bob", "token": "b" * 24}]
    config = write_config(
        folder,
        {"k": kitchen("k"), "gone": {"transport": "stdio", "command": str(folder / "no-such-program")}},
        auth={"tokens": tokens, "admin_groups": ["ops"]},
        policy={"rules": [{"name": "no-boom", "deny": ["k.boom"]}]},
        limits={"startup_wait_s": 5},
        think={"state_dir": str(folder / "think")},
    )
    gateway = Gateway(load_config(config), record=True)
    async with connected(gateway) as (gateway, client):
        await client.call_tool("k.echo", {"text": "hello", "token": "t0k"})
        yield gateway, client


def viewer(identity: Identity, *, admin: bool = False) -> views.Viewer:
    return views.Viewer(identity, admin)


async def test_the_servers_at_a_glance_count_the_down_and_tell_a_command_that_cannot_start(
    running: tuple[Gateway, Client],
) -> None:
    gateway, _ = running
    shown = views.health(gateway)
    rows = {r["name"]: r for r in shown["servers"]}
    assert shown["summary"] == f"1 of {len(rows)} servers down" and shown["status"] == "degraded"
    assert rows["k"]["trouble"] is None and rows["k"]["since"] is None
    gone = rows["gone"]
    assert gone["state"] not in views.SERVING and gone["trouble"].startswith("cannot start: fix its command")
    assert gone["since"] is not None and gone["since"].startswith("since ") and gone["since"].endswith(" s)")


def test_times_read_as_a_person_reads_them() -> None:
    assert [views.span(s) for s in (-3, 59.6, 119, 120, 7199, 7200)] == [
        "0 s",
        "60 s",
        "119 s",
        "2 min",
        "119 min",
        "2 h",
    ]
    assert views.when(0) == "1970-01-01 00:00:00 UTC"


async def test_a_viewer_sees_their_own_listing_and_an_admin_everyone_configured_or_seen(
    running: tuple[Gateway, Client],
) -> None:
    gateway, _ = running
    assert [i.name for i in views.identities(gateway, viewer(BOB))] == ["bob"]
    seen: list[dict[str, Any]] = [
        {"identity": "carol", "kind": "jwt", "groups": ["dev"]},
        {"identity": "x", "kind": "?"},
    ]
    everyone = views.identities(gateway, viewer(ALICE, admin=True), seen)
    assert [(i.name, i.kind) for i in everyone] == [("alice", "static"), ("bob", "static"), ("carol", "jwt")]
    assert everyone[2].groups == frozenset({"dev"})  # what policy rules match for carol


async def test_the_catalog_says_per_identity_which_rule_hides_a_tool_once_and_ranks_a_search(
    running: tuple[Gateway, Client],
) -> None:
    gateway, _ = running
    shown = await views.catalog(gateway, viewer(ALICE, admin=True), "return the text unchanged")
    assert shown["identities"] == ["alice", "bob"]
    rows = {r["name"]: r for r in shown["tools"]}
    assert rows["k.boom"]["per"] == ["hidden: no-boom", "hidden: no-boom"] and rows["k.echo"]["per"] == ["listed"] * 2
    assert list(shown["denials"]) == ["no-boom"] and "k.boom" in shown["denials"]["no-boom"]  # said once
    assert shown["found"] is not None and shown["found"]["hits"][0]["name"] == "k.echo"
    ways = {r["client"]: r for r in shown["rules"]}  # the clients that search natively, and the default
    assert "claude-code" in next(iter(ways)) and 0 < ways["(default)"]["listed"] <= ways["(default)"]["tools"]
    too_long = await views.catalog(gateway, viewer(BOB), "x" * 100_000)
    assert too_long["found"] is not None and too_long["found"]["error"] and too_long["found"]["hits"] == []


async def test_a_tools_try_form_has_its_fields_and_says_it_may_change_things(running: tuple[Gateway, Client]) -> None:
    gateway, _ = running
    echo = views.tried((await gateway.registry.catalog()).tools["k.echo"])
    assert echo["name"] == "k.echo" and echo["description"] == "Return the text unchanged."
    assert [f["name"] for f in echo["fields"]] == ["text"] and echo["changes_state"] is True


async def test_a_viewer_sees_their_own_calls_an_admin_everyones_and_arguments_only_their_makers(
    running: tuple[Gateway, Client],
) -> None:
    gateway, client = running
    publisher = gateway.publisher
    assert publisher is not None
    await publisher.flush()
    [first] = await publisher.log.recent(None)
    maker = Identity(first["identity"], first["kind"], first["identity"])  # the in-process client's user
    assert maker.owner == first["owner"] and first["arguments"] is None  # not chosen: not kept
    await publisher.keeping.choose(maker.owner, True)
    await client.call_tool("k.echo", {"text": "again", "token": "t0k"})
    await publisher.flush()
    recent = await publisher.log.recent(None)
    mine = views.calls(views.visible(recent, viewer(maker)))
    assert mine[0]["arguments"] is not None and '"token": "[redacted]"' in mine[0]["arguments"]
    assert mine[0]["when"].endswith(" UTC") and mine[0]["ms"] == round(mine[0]["seconds"] * 1000, 1)
    theirs = views.visible(recent, viewer(ALICE, admin=True))
    assert [c["ref"] for c in theirs] == [c["ref"] for c in recent] and all(c["arguments"] is None for c in theirs)
    assert views.owners(viewer(BOB)) == frozenset({BOB.owner}) and views.owners(viewer(ALICE, admin=True)) is None
    assert await publisher.log.recent(views.owners(viewer(BOB))) == []
    assert views.call(mine, mine[1]["ref"]) == mine[1] and views.call(mine, "nope-1") is None
    await publisher.keeping.choose(maker.owner, False)
