"""Completion and resource subscriptions of a per-user server (one process per identity, `downstreams/pool.py`)
reach the caller's own process, and its updates and logs only that identity's sessions (DESIGN §15, §16), in both
eras."""

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp.server.subscriptions import ResourceUpdated

from tests.downstreams.relay.clients import Person
from tests.harness import PYTHON, ROOT, http_client, http_gateway, write_config

WATCHED, OTHER = "test://watched-resource", "test://static-text"
TOKENS = {"ann": "ann-token-0123456789", "bob": "bob-token-0123456789"}
PER_USER: dict[str, Any] = {
    "transport": "stdio",
    "command": PYTHON,
    "args": ["-m", "tests.servers.relaying"],
    "env": {"PYTHONPATH": str(ROOT), "X": "${user:X}"},
    "cwd": str(ROOT),
}

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    config = write_config(
        tmp_path_factory.mktemp("per-user"),
        {"p": {**PER_USER, "protocol": "legacy"}, "p26": {**PER_USER, "protocol": "modern"}},
        auth={"tokens": [{"name": n, "token": t} for n, t in TOKENS.items()]},
        secrets={"sources": ["header"]},
    )
    async with http_gateway(config) as base:
        yield base


def as_user(name: str) -> dict[str, str]:
    return {"authorization": f"Bearer {TOKENS[name]}", "x-gateway-secret-x": f"{name}-x"}


@pytest.mark.parametrize("server", ["p", "p26"])
async def test_completion_of_a_per_user_server_is_answered_by_the_callers_own_process(
    gateway: str, server: str
) -> None:
    values: dict[str, list[str]] = {}
    with anyio.fail_after(60):
        for name in TOKENS:
            async with http_client(gateway, mode="legacy", headers=as_user(name)) as client:
                await client.list_prompts()  # as a client would first: starts the user's process, lists its prompts
                ref = types.PromptReference(name=f"{server}.test_prompt_with_arguments")
                values[name] = (await client.complete(ref, {"name": "arg1", "value": "a"})).completion.values
    assert values == {name: ["test_prompt_with_arguments:arg1=a", f"X={name}-x"] for name in TOKENS}


async def test_a_per_user_servers_updates_reach_only_that_users_subscribed_sessions(gateway: str) -> None:
    ann, bob = Person("ann"), Person("bob")
    watched, other = f"p+{WATCHED}", f"p+{OTHER}"

    async def subscribe(client: Any, uri: str) -> None:
        await client.session.send_request(
            types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri)), types.EmptyResult
        )

    async with (
        http_client(gateway, mode="legacy", headers=as_user("ann"), **ann.callbacks()) as ann_client,
        http_client(gateway, mode="legacy", headers=as_user("bob"), **bob.callbacks()) as bob_client,
    ):
        with anyio.fail_after(60):
            # Each user's own process announces an update as soon as it is subscribed to.
            for person, client in ((ann, ann_client), (bob, bob_client)):
                await subscribe(client, watched)
                await person.got_update.wait()
            ann.got_update = anyio.Event()
            await ann_client.call_tool("p.touch", {"uri": WATCHED})  # in ann's process: for ann alone
            await ann.got_update.wait()
            bob.got_update = anyio.Event()
            await subscribe(bob_client, other)  # bob's next update, after any of ann's that leaked to him
            await bob.got_update.wait()
    assert ann.updated == [watched, watched]
    assert bob.updated == [watched, other]


async def test_a_per_user_servers_updates_reach_only_that_users_2026_listen_streams(gateway: str) -> None:
    watched, other = f"p26+{WATCHED}", f"p26+{OTHER}"
    async with (
        http_client(gateway, mode="auto", headers=as_user("ann")) as ann,
        http_client(gateway, mode="auto", headers=as_user("bob")) as bob,
        ann.listen(resource_subscriptions=[watched]) as ann_stream,
        bob.listen(resource_subscriptions=[watched, other]) as bob_stream,
    ):
        with anyio.fail_after(60):
            await ann.call_tool("p26.touch", {"uri": WATCHED})  # in ann's process
            anns = await ann_stream.__anext__()
            await bob.call_tool("p26.touch", {"uri": OTHER})  # in bob's: his first event, unless ann's leaked
            bobs = await bob_stream.__anext__()
    assert isinstance(anns, ResourceUpdated) and anns.uri == watched
    assert isinstance(bobs, ResourceUpdated) and bobs.uri == other


async def test_a_per_user_process_logs_outside_a_call_only_to_its_own_identitys_sessions(tmp_path: Path) -> None:
    # A fresh gateway: no user's process runs yet, so each one's first listing is its own process's, outside any call.
    server = {**PER_USER, "protocol": "legacy", "env": {**PER_USER["env"], "LOG_LISTINGS": "1"}}
    config = write_config(
        tmp_path,
        {"p": server},
        auth={"tokens": [{"name": n, "token": t} for n, t in TOKENS.items()]},
        secrets={"sources": ["header"]},
    )
    ann, bob = Person("ann"), Person("bob")
    async with (
        http_gateway(config) as base,
        http_client(base, mode="legacy", headers=as_user("bob"), **bob.callbacks()) as bob_client,
        http_client(base, mode="legacy", headers=as_user("ann"), **ann.callbacks()) as ann_client,
    ):
        with anyio.fail_after(60):
            debug = types.SetLevelRequest(params=types.SetLevelRequestParams(level="debug"))
            for client in (bob_client, ann_client):  # bob first: a leak would reach him before ann is told
                await client.session.send_request(debug, types.EmptyResult)
            await ann_client.list_tools()  # starts ann's process, which logs as it lists, outside any call
            await ann.got_log.wait()
            # bob's next message on the same stream: his own process announces an update as it is subscribed to.
            subscribe = types.SubscribeRequest(params=types.SubscribeRequestParams(uri=f"p+{WATCHED}"))
            await bob_client.session.send_request(subscribe, types.EmptyResult)
            await bob.got_update.wait()
    assert [str(log.data) for log in ann.logs] == ["listing tools for X=ann-x"]
    assert [str(log.data) for log in bob.logs if "ann" in str(log.data)] == []
