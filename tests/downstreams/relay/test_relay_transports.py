"""The relay (DESIGN §15) through downstreams beyond stdio: a legacy SSE server asks the calling client for
elicitation and sampling; URL-mode elicitation and its `notifications/elicitation/complete` pass through."""

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest

from tests.downstreams.relay.clients import Person
from tests.harness import PYTHON, ROOT, http_client, http_gateway, text_of, write_config

ENV = {"PYTHONPATH": str(ROOT)}
WATCHED = "test://watched-resource"
STDIO: dict[str, Any] = {"transport": "stdio", "command": PYTHON, "args": ["-m", "tests.servers.relaying"]}
CRASHED = {"legacy": "w", "modern": "w26"}
"""The module gateway's servers that `test_a_subscription_outlives_a_crash_of_its_server` crashes, by protocol."""

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory, relaying_port: int) -> AsyncIterator[str]:
    servers = {
        # One SSE server, connected twice: its requests pushed (handshake era), and as input-required rounds (2026).
        "sse": {"transport": "sse", "url": f"http://127.0.0.1:{relaying_port}/sse", "protocol": "legacy"},
        "sse26": {"transport": "sse", "url": f"http://127.0.0.1:{relaying_port}/sse", "protocol": "modern"},
        "std": {**STDIO, "env": ENV, "cwd": str(ROOT), "protocol": "legacy"},
        # Crashed by the subscription tests, one each: no other test calls them.
        **{CRASHED[protocol]: {**STDIO, "env": ENV, "cwd": str(ROOT), "protocol": protocol} for protocol in CRASHED},
    }
    async with http_gateway(write_config(tmp_path_factory.mktemp("gw"), servers)) as base:
        yield base


@pytest.mark.parametrize("server", ["sse", "sse26"])
async def test_an_sse_servers_elicitation_and_sampling_reach_the_calling_client(gateway: str, server: str) -> None:
    asked = Person("ann")
    async with http_client(gateway, mode="legacy", **asked.callbacks()) as client:
        with anyio.fail_after(30):
            elicited = await client.call_tool(f"{server}.test_elicitation", {"message": "over sse?"})
            sampled = await client.call_tool(f"{server}.test_sampling", {"prompt": "hello sse"})
    assert asked.asked[0] == "over sse?" and "hello sse" in asked.asked[1] and len(asked.asked) == 2
    assert '"response": "ann"' in text_of(elicited)
    assert text_of(sampled) == "LLM response: ann"


@pytest.mark.parametrize("server", ["sse", "std", "sse26"])
async def test_a_url_elicitation_and_its_completion_reach_the_calling_client(gateway: str, server: str) -> None:
    asked = Person("ann")
    async with http_client(gateway, mode="legacy", **asked.callbacks()) as client:
        with anyio.fail_after(30):
            result = await client.call_tool(f"{server}.test_url_elicitation", {"id": f"login-{server}"})
            await client.list_tools()  # a round trip: a notification sent before it has arrived
    assert len(asked.elicitations) == 1, text_of(result)
    [params] = asked.elicitations
    assert isinstance(params, types.ElicitRequestURLParams)
    assert params.url == f"https://example.test/auth/login-{server}"
    # A 2026-era server names no id; the gateway gives the one a 2025-11-25 client requires.
    assert params.elicitation_id == f"login-{server}" or (
        server == "sse26" and str(params.elicitation_id).startswith("gateway-")
    )
    assert text_of(result) == f"url elicitation login-{server}: action=accept"
    # The 2026 era has no `notifications/elicitation/complete`: its server sends none.
    assert asked.completed == ([] if server == "sse26" else [f"login-{server}"])


async def test_a_completion_after_the_call_ended_reaches_the_session_asked_and_no_other(gateway: str) -> None:
    ann, bob = Person("ann"), Person("bob")
    async with (
        http_client(gateway, mode="legacy", **ann.callbacks()) as ann_client,
        http_client(gateway, mode="legacy", **bob.callbacks()) as bob_client,
    ):
        with anyio.fail_after(30):
            await ann_client.call_tool("std.test_url_elicitation_later", {"id": "later"})
            assert ann.completed == []
            # The server completes it while another session's call is in flight there.
            await bob_client.call_tool("std.complete_elicitation", {"id": "later"})
            await bob_client.call_tool("std.complete_elicitation", {"id": "later"})  # again: nobody to tell
            await ann_client.list_tools()  # round trips: a notification sent before them has arrived
            await bob_client.list_tools()
    assert ann.completed == ["later"] and bob.completed == []


class Watcher:
    """A client's message handler that counts the resource updates it hears."""

    def __init__(self) -> None:
        self.updated: list[str] = []
        self._changed = anyio.Event()

    async def message(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.updated.append(message.params.uri)
            self._changed.set()
            self._changed = anyio.Event()

    async def heard(self, count: int) -> None:
        while len(self.updated) < count:
            await self._changed.wait()


@pytest.mark.parametrize("protocol", sorted(CRASHED))
async def test_a_subscription_outlives_a_crash_of_its_server(gateway: str, protocol: str) -> None:
    w = CRASHED[protocol]
    uri, watched = f"{w}+{WATCHED}", WATCHED
    ann = Watcher()
    async with http_client(gateway, mode="legacy", message_handler=ann.message) as client:
        with anyio.fail_after(60):
            subscribe = types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri))
            await client.session.send_request(subscribe, types.EmptyResult)
            if protocol == "legacy":
                await ann.heard(1)  # the fixture announces an update as soon as it is subscribed to
            else:
                await client.call_tool(f"{w}.touch", {"uri": watched})
                await ann.heard(1)
            assert (await client.call_tool(f"{w}.crash", {})).is_error
            if protocol == "legacy":
                await ann.heard(2)  # announced again: the restarted server was subscribed anew, unasked
            else:  # the call waits for the restart; the server's updates reach a listen stream opened anew
                await client.call_tool(f"{w}.touch", {"uri": watched})
                await ann.heard(2)
    assert ann.updated == [uri, uri]


async def test_a_per_user_servers_url_elicitation_completion_reaches_that_user(tmp_path: Path) -> None:
    token = "ann-token-0123456789"
    server = {**STDIO, "env": {**ENV, "X": "${user:X}"}, "cwd": str(ROOT), "protocol": "legacy"}
    auth = {"tokens": [{"name": "ann", "token": token}]}
    config = write_config(tmp_path, {"p": server}, auth=auth, secrets={"sources": ["header"]})
    ann = Person("ann")
    headers = {"authorization": f"Bearer {token}", "x-gateway-secret-x": "ann-x"}
    async with http_gateway(config) as base, http_client(base, mode="legacy", headers=headers, **ann.callbacks()) as c:
        with anyio.fail_after(60):
            result = await c.call_tool("p.test_url_elicitation", {"id": "per-user"})
            await c.list_tools()  # a round trip: a notification sent before it has arrived
    assert text_of(result) == "url elicitation per-user: action=accept"
    assert ann.completed == ["per-user"]


async def test_a_long_lived_session_keeps_only_its_newest_url_elicitations(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        {"std": {**STDIO, "env": ENV, "cwd": str(ROOT), "protocol": "legacy"}},
        limits={"url_elicitations_per_session": 1},
    )
    ann, bob = Person("ann"), Person("bob")
    async with (
        http_gateway(config) as base,
        http_client(base, mode="legacy", **ann.callbacks()) as ann_client,
        http_client(base, mode="legacy", **bob.callbacks()) as bob_client,
    ):
        with anyio.fail_after(60):
            for ident in ("first", "second"):  # asked, never completed: the first is dropped for the second
                await ann_client.call_tool("std.test_url_elicitation_later", {"id": ident})
            for ident in ("first", "second"):
                await bob_client.call_tool("std.complete_elicitation", {"id": ident})
            await ann_client.list_tools()  # a round trip: a notification sent before it has arrived
    assert len(ann.elicitations) == 2
    assert ann.completed == ["second"] and bob.completed == []
