"""List changes reach clients coalesced: a server announcing thousands of changes at once costs each client a
few notices, not thousands (tests/servers/faulty.py's `flood` writes them straight onto the wire)."""

from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client

from gateway.downstreams.relay import Relay
from gateway.fronts import notify
from gateway.fronts.audience import AudienceBus
from gateway.fronts.notify import Notifier
from gateway.session import Identity
from tests.harness import gateway_params, text_of, write_config
from tests.system.faults.wire import faulty

pytestmark = pytest.mark.anyio

FLOOD = 3000


async def test_a_flood_of_list_changes_reaches_the_client_as_a_few_notices(tmp_path: Path) -> None:
    notices, heard = 0, anyio.Event()

    async def on_message(message: Any) -> None:
        nonlocal notices
        if isinstance(message, types.ToolListChangedNotification):
            notices += 1
            heard.set()

    config = write_config(tmp_path, {"f": faulty()})
    async with Client(gateway_params(config), mode="legacy", message_handler=on_message) as client:
        with anyio.fail_after(60):
            result = await client.call_tool("f.flood", {"count": FLOOD})
            await heard.wait()
            assert text_of(result) == f"flooded {FLOOD}"
            assert (await client.list_tools()).tools  # the session goes on, its listing fresh
    assert 1 <= notices <= 10, f"{FLOOD} changes reached the client as {notices} notices"


class Connection:
    """What the notifier sends a list change on (the SDK's connection of a handshake-era client)."""

    def __init__(self) -> None:
        self.told = 0

    async def send_tool_list_changed(self) -> None:
        self.told += 1


async def test_a_client_that_attached_after_the_last_change_is_not_told_of_it() -> None:
    relay = Relay(logger_name=lambda server, name: server)
    notifier = Notifier(relay, AudienceBus())
    early, late, later = Connection(), Connection(), Connection()
    relay.attach("early", early)
    async with notifier.running():
        notifier.list_changed("tools")  # told at once: `early`
        notifier.list_changed("tools")  # within the window: told at its end
        relay.attach("late", late)  # e.g. a client's handshake after the gateway's start-up: it lists afresh
    assert (early.told, late.told) == (2, 0)
    relay.attach("later", later)
    async with notifier.running():
        notifier.list_changed("tools")
    assert (early.told, late.told, later.told) == (3, 1, 1)


class Stalled(Connection):
    """A client that stopped reading its stream: the SDK's send waits for room that never comes."""

    async def send_tool_list_changed(self) -> None:
        await anyio.sleep_forever()


async def test_a_client_that_stopped_reading_holds_up_no_other_client_nor_the_next_notice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(notify, "DELIVERY_S", 0.2)
    relay = Relay(logger_name=lambda server, name: server)
    notifier = Notifier(relay, AudienceBus())
    stalled, other = Stalled(), Connection()
    relay.attach("stalled", stalled)
    relay.attach("other", other)
    with anyio.fail_after(10):
        async with notifier.running():
            notifier.list_changed("tools")
            notifier.tools_changed("stalled")
    assert other.told == 1
    assert relay.connection("stalled") is stalled  # slow is not gone: it hears the next notice, if it reads again


class ResourcesConnection:
    def __init__(self) -> None:
        self.told = 0

    async def send_resource_list_changed(self) -> None:
        self.told += 1


async def test_a_change_of_one_identitys_own_listing_is_told_to_that_identitys_sessions_alone() -> None:
    """By the identity each session was opened by, not by its key's spelling: a subject may hold a `|`."""
    ann, bob, ann_x = (Identity(name, "static", name) for name in ("ann", "bob", "ann|x"))
    relay = Relay(logger_name=lambda server, name: server)
    sessions = [(f"{ann.key}|s1", ann), (f"{ann.key}|s2", ann), (f"{bob.key}|s3", bob), ("stdio", bob)]
    sessions.append((f"{ann_x.key}|s4", ann_x))  # its key starts with ann's key and a `|`
    connections = {key: ResourcesConnection() for key, _who in sessions}
    for key, who in sessions:
        relay.attach(key, connections[key], who.key)
    notifier = Notifier(relay, AudienceBus())
    async with notifier.running():
        notifier.list_changed("resources", ann.key)
    assert [c.told for c in connections.values()] == [1, 1, 0, 0, 0]
    async with notifier.running():
        notifier.list_changed("resources", bob.key)
    assert [c.told for c in connections.values()] == [1, 1, 1, 1, 0]


async def test_leaving_tells_what_changed_in_an_open_window_at_once_and_waits_out_no_window(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(notify, "WINDOW_S", 3600.0)  # a window nobody may wait out
    relay = Relay(logger_name=lambda server, name: server)
    notifier = Notifier(relay, AudienceBus())
    client = Connection()
    relay.attach("client", client)
    with anyio.fail_after(10):
        async with notifier.running():
            notifier.list_changed("tools")  # told at once; its window opens
        assert client.told == 1  # nothing changed in the window: nothing more to tell
        async with notifier.running():
            notifier.list_changed("tools")
            notifier.list_changed("tools")  # in the window: told when leaving, not at the window's end
        assert client.told == 3
