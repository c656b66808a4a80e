"""The relay (DESIGN §15) end to end: real clients with callbacks, the gateway over HTTP, the conformance fixture
as two stdio downstreams, one speaking the handshake era (`old`: it pushes its requests) and one the 2026 era
(`new`: it answers with input-required results)."""

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.session import ClientRequestContext

from gateway.downstreams.relay import Relay
from gateway.inflight import Peer
from tests.downstreams.relay.clients import (
    WATCHED,
    Person,
    call_as,
    listen_streams_hear_only_their_uris,
    logs_reach_only_the_caller,
    updates_reach_only_the_subscriber,
)
from tests.harness import PYTHON, ROOT, hints_of, http_client, http_gateway, text_of, write_config

FIXTURE = str(ROOT / "tests" / "servers" / "conformance.py")
ENV = {"PYTHONPATH": str(ROOT)}
SERVER: dict[str, Any] = {"transport": "stdio", "command": PYTHON, "args": [FIXTURE], "env": ENV, "cwd": str(ROOT)}

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    servers = {"old": {**SERVER, "protocol": "legacy", "timeout_s": 3}, "new": {**SERVER, "protocol": "modern"}}
    config = write_config(tmp_path_factory.mktemp("relay"), servers)
    async with http_gateway(config) as base:
        yield base


@pytest.mark.parametrize("server", ["old", "new"])
async def test_an_elicitation_reaches_the_session_whose_call_caused_it_and_no_other(gateway: str, server: str) -> None:
    ann, bob = Person("ann"), Person("bob")
    async with (
        http_client(gateway, mode="legacy", **ann.callbacks()) as ann_client,
        http_client(gateway, mode="legacy", **bob.callbacks()) as bob_client,
    ):
        results: dict[str, types.CallToolResult] = {}

        async def call(who: str, client: Any) -> None:
            args = {"message": f"question for {who}"}
            results[who] = await client.call_tool(f"{server}.test_elicitation", args)

        with anyio.fail_after(30):
            if server == "new":  # input-required rounds come back in each call's own answer: concurrent is exact
                async with anyio.create_task_group() as tg:
                    tg.start_soon(call, "ann", ann_client)
                    tg.start_soon(call, "bob", bob_client)
            else:  # pushed requests carry no call id: one session's call in flight, the other connected and idle
                await call("ann", ann_client)
                await call("bob", bob_client)
    assert ann.asked == ["question for ann"] and bob.asked == ["question for bob"], [
        text_of(r) for r in results.values()
    ]
    assert '"response": "ann"' in text_of(results["ann"]) and '"response": "bob"' in text_of(results["bob"])


async def test_content_passes_unchanged_and_gateway_blocks_are_only_appended(gateway: str) -> None:
    async with (
        http_client(gateway, mode="legacy") as through,
        Client(StdioServerParameters(command=PYTHON, args=[FIXTURE], env=ENV, cwd=str(ROOT))) as direct,
    ):
        want = await direct.session.send_request(
            types.CallToolRequest(params=types.CallToolRequestParams(name="fidelity")), types.CallToolResult
        )
        got = await through.call_tool("old.fidelity", {})
        blob = (await through.read_resource("old+test://static-binary")).contents[0]
        want_blob = (await direct.read_resource("test://static-binary")).contents[0]
    assert isinstance(blob, types.BlobResourceContents) and isinstance(want_blob, types.BlobResourceContents)
    assert blob.blob == want_blob.blob and blob.mime_type == want_blob.mime_type == "image/png"
    assert got.content[: len(want.content)] == want.content
    assert all(
        isinstance(b, types.TextContent) and b.text.startswith("[gateway]") for b in got.content[len(want.content) :]
    )
    assert got.structured_content == want.structured_content
    assert want.meta is not None and got.meta is not None
    assert got.meta["fixture/result"] is want.meta["fixture/result"] is True  # (the server's identity stamp is not)


@pytest.mark.parametrize("server", ["old", "new"])
async def test_roots_are_asked_of_the_calling_client_and_its_changes_reach_the_server(
    gateway: str, server: str
) -> None:
    async def roots(ctx: ClientRequestContext) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///work/ann", name="ann")])

    async with http_client(gateway, mode="legacy", list_roots_callback=roots) as client:
        with anyio.fail_after(30):
            first = await client.call_tool(f"{server}.test_roots", {})
            await client.session.send_notification(types.RootsListChangedNotification())
            second = await client.call_tool(f"{server}.test_roots", {})
    assert text_of(first).startswith("roots: file:///work/ann")
    if server == "old":  # a 2026-era server has no roots/list_changed: its next call asks again anyway
        seen = int(text_of(first).rsplit(" ", 1)[1])
        assert text_of(second).endswith(f"list_changed seen {seen + 1}")


@pytest.mark.parametrize("server", ["old", "new"])
async def test_sampling_is_relayed_to_the_calling_client(gateway: str, server: str) -> None:
    ann = Person("ann")
    result = await call_as(ann, gateway, "legacy", f"{server}.test_sampling", {"prompt": "hello"})
    assert text_of(result) == "LLM response: ann"
    assert len(ann.asked) == 1 and "hello" in ann.asked[0]


async def test_a_2026_client_answers_a_2026_servers_input_rounds_through_the_gateway(gateway: str) -> None:
    ann = Person("ann")
    async with http_client(gateway, mode="auto", **ann.callbacks()) as client:
        assert client.protocol_version == "2026-07-28"
        with anyio.fail_after(30):
            result = await client.call_tool("new.test_elicitation", {"message": "modern question"})
    assert ann.asked == ["modern question"] and '"response": "ann"' in text_of(result)


async def test_a_client_without_the_capability_gets_a_hint_and_the_server_a_clear_error(gateway: str) -> None:
    async with http_client(gateway, mode="legacy") as client:  # no callbacks: no elicitation capability
        with anyio.fail_after(30):
            result = await client.call_tool("old.test_elicitation", {"message": "anyone?"})
    assert "did not declare the elicitation capability" in text_of(result)  # what the server was told
    assert any("elicitation/create" in hint for hint in hints_of(result))


async def test_a_client_that_never_answers_holds_the_call_no_longer_than_the_servers_timeout(gateway: str) -> None:
    async def never(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async with http_client(gateway, mode="legacy", elicitation_callback=never) as client:
        with anyio.fail_after(20):  # `old` has timeout_s: 3
            result = await client.call_tool("old.test_elicitation", {"message": "still there?"})
    assert "timed out" in text_of(result).lower() or "timeout" in text_of(result).lower()


async def test_logs_of_a_call_reach_its_session_named_by_server_and_not_another(gateway: str) -> None:
    await logs_reach_only_the_caller(gateway, "old", "legacy", level_logs=2)  # `old` answers each session's level


async def test_resource_updates_reach_only_the_subscribed_session_with_the_exposed_uri(gateway: str) -> None:
    await updates_reach_only_the_subscriber(gateway, f"old+{WATCHED}")


@pytest.mark.parametrize("server", ["old", "new"])
async def test_a_2026_clients_listen_stream_hears_only_the_resources_it_listed(gateway: str, server: str) -> None:
    await listen_streams_hear_only_their_uris(gateway, server)


async def test_a_subscription_to_an_unknown_resource_is_a_clear_error(gateway: str) -> None:
    async with http_client(gateway, mode="legacy") as client:
        with pytest.raises(MCPError, match="nowhere://x"):
            await client.session.send_request(
                types.SubscribeRequest(params=types.SubscribeRequestParams(uri="nowhere://x")), types.EmptyResult
            )
        assert (await client.list_tools()).tools  # the session goes on


async def test_completion_refs_are_mapped_back_to_the_servers_own(gateway: str) -> None:
    async with http_client(gateway, mode="legacy") as client:
        prompt = types.PromptReference(name="old.test_prompt_with_arguments")
        template = types.ResourceTemplateReference(uri="new+test://template/{id}/data")
        by_prompt = await client.complete(prompt, {"name": "arg1", "value": "he"})
        by_template = await client.complete(template, {"name": "id", "value": "1"})
        with pytest.raises(MCPError, match="Unknown prompt"):
            await client.complete(types.PromptReference(name="nobody.nothing"), {"name": "a", "value": "b"})
    # The fixture echoes the reference it received: the server's own names, not the gateway's.
    assert by_prompt.completion.values == ["test_prompt_with_arguments:arg1=he"]
    assert by_template.completion.values == ["test://template/{id}/data:id=1"]


async def test_a_downstream_request_with_no_call_in_flight_gets_a_clear_error() -> None:
    relay = Relay(logger_name=lambda server, name: server)
    sampling = relay.callbacks("git", 5.0)["sampling_callback"]
    params = types.CreateMessageRequestParams(messages=[], max_tokens=1)
    answer = await sampling(None, params)
    assert isinstance(answer, types.ErrorData)
    assert "no client call in flight on server 'git'" in answer.message


async def test_roots_asked_with_no_call_in_flight_are_the_configured_ones_never_an_error() -> None:
    relay = Relay(logger_name=lambda server, name: server)
    shared = types.Root(uri="file:///srv/shared")
    assert await relay.callbacks("fs", 5.0, [shared])["list_roots_callback"](None) == types.ListRootsResult(
        roots=[shared]
    )
    assert await relay.callbacks("fs", 5.0)["list_roots_callback"](None) == types.ListRootsResult(roots=[])


def test_two_unprefixed_servers_are_a_config_error_naming_both(tmp_path: Path) -> None:
    from gateway.config import load_config
    from gateway.errors import ConfigError

    config = write_config(tmp_path, {"a": {**SERVER, "prefix": False}, "b": {**SERVER, "prefix": False}})
    with pytest.raises(ConfigError, match="'a' and 'b' both set prefix: false"):
        load_config(config)


async def test_a_per_user_servers_elicitation_reaches_that_users_call(tmp_path: Path) -> None:
    tokens = {"ann": "ann-token-0123456789", "bob": "bob-token-0123456789"}
    server = {**SERVER, "env": {**ENV, "X": "${user:X}"}, "protocol": "legacy"}
    config = write_config(
        tmp_path,
        {"p": server},
        auth={"tokens": [{"name": n, "token": t} for n, t in tokens.items()]},
        secrets={"sources": ["header"]},
    )
    people = {name: Person(name) for name in tokens}
    results: dict[str, types.CallToolResult] = {}

    async def call(base: str, name: str) -> None:
        headers = {"authorization": f"Bearer {tokens[name]}", "x-gateway-secret-x": f"{name}-x"}
        async with http_client(base, mode="legacy", headers=headers, **people[name].callbacks()) as client:
            results[name] = await client.call_tool("p.test_elicitation", {"message": f"for {name}"})

    async with http_gateway(config) as base:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:  # one process each: concurrent calls are exact
                for name in tokens:
                    tg.start_soon(call, base, name)
    for name, person in people.items():
        assert person.asked == [f"for {name}"]
        assert f'"response": "{name}"' in text_of(results[name])


async def test_a_pushed_request_with_calls_of_two_sessions_in_flight_is_refused_naming_the_way_out() -> None:
    relay = Relay(logger_name=lambda server, name: server)
    elicit = relay.callbacks("git", 5.0)["elicitation_callback"]
    params = types.ElicitRequestFormParams(message="?", requested_schema={"type": "object", "properties": {}})
    ann, bob = (Peer(key, None, None, None, modern=False) for key in ("ann", "bob"))
    with relay.calling("git", ann), relay.calling("git", bob):
        answer = await elicit(None, params)
    assert isinstance(answer, types.ErrorData)
    assert "calls of 2 client sessions are in flight on server 'git'" in answer.message
    assert "protocol: modern" in answer.message


async def test_a_call_that_failed_is_no_longer_in_flight_so_a_push_meets_no_call() -> None:
    relay = Relay(logger_name=lambda server, name: server)
    sampling = relay.callbacks("git", 5.0)["sampling_callback"]
    params = types.CreateMessageRequestParams(messages=[], max_tokens=1)
    ann = Peer("ann", None, None, None, modern=False)
    with pytest.raises(LookupError), relay.calling("git", ann):
        raise LookupError("the call failed")
    answer = await sampling(None, params)
    assert isinstance(answer, types.ErrorData)
    assert "no client call in flight on server 'git'" in answer.message
