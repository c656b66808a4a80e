"""Start-up with a server that never finishes (or finishes late) its handshake: the others serve at once."""

from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client

from tests.harness import gateway_params, kitchen, text_of, write_config
from tests.system.faults.wire import call, faulty, status

pytestmark = pytest.mark.anyio


# -- start-up: a server that never finishes its handshake does not hold the others ------------------


class ListChanges:
    """Counts the gateway's tools/list_changed notifications, so a test can wait for the next one."""

    def __init__(self) -> None:
        self.event = anyio.Event()

    async def on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.event.set()

    async def until_listed(self, client: Client, name: str) -> set[str]:
        """The tool names once `name` is among them, re-listing after each list change."""
        while name not in (names := {t.name for t in (await client.list_tools()).tools}):
            await self.event.wait()
            self.event = anyio.Event()
        return names


async def test_initialize_does_not_wait_for_a_server_that_never_finishes_its_handshake(tmp_path: Path) -> None:
    changes = ListChanges()
    servers = {"k": kitchen("k"), "mute": faulty("--no-handshake", connect_timeout_s=60)}
    config = write_config(tmp_path, servers, limits={"startup_wait_s": 0.5})
    with anyio.fail_after(20):  # without fail-open: 60 s (the mute server's connect_timeout_s)
        async with Client(gateway_params(config), mode="legacy", message_handler=changes.on_message) as client:
            names = await changes.until_listed(client, "k.echo")  # listed at once, or added when it came up
            assert not any(n.startswith("mute.") for n in names)
            mute = (await status(client))["mute"]
            assert mute["state"] == "starting" and mute["tools"] is None


async def test_a_server_that_finishes_its_handshake_late_is_added_with_list_changed(tmp_path: Path) -> None:
    changes = ListChanges()
    servers = {"late": faulty("--handshake-delay", "2.5")}
    config = write_config(tmp_path, servers, limits={"startup_wait_s": 0.5})
    async with Client(gateway_params(config), mode="legacy", message_handler=changes.on_message) as client:
        assert not any(t.name.startswith("late.") for t in (await client.list_tools()).tools)
        with anyio.fail_after(20):
            await changes.until_listed(client, "late.echo")
        assert text_of(await call(client, "echo", {"text": "hi"}, server="late")) == "hi"
