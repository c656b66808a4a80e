"""The relay (DESIGN §15) through Streamable HTTP downstreams, in both client eras: the relaying fixture serves
`/mcp`, connected twice (`h`: handshake era, it pushes its requests; `h26`: 2026 era, it answers input-required),
plus over stdio in the 2026 era (`s26`). Prompts and resources that ask the client travel as tools/call's do."""

from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
import mcp.types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.downstreams.relay.clients import (
    WATCHED,
    Person,
    call_as,
    listen_streams_hear_only_their_uris,
    logs_reach_only_the_caller,
    updates_reach_only_the_subscriber,
)
from tests.harness import PYTHON, ROOT, http_client, http_gateway, text_of, write_config

STDIO: dict[str, Any] = {"transport": "stdio", "command": PYTHON, "args": ["-m", "tests.servers.relaying"]}
ERAS = {"legacy": "2025-11-25", "auto": "2026-07-28"}
# (client mode, server): a 2026-era client cannot be asked by a pushing (handshake-era) server, by the era's rules.
PAIRS = [("legacy", "h"), ("legacy", "h26"), ("auto", "h26")]
# ... but its tool call, prompt or read can: the pushing server's request becomes an input-required result, the
# retry answers it.
CALL_PAIRS = [*PAIRS, ("auto", "h")]

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory, relaying_port: int) -> AsyncIterator[str]:
    url = f"http://127.0.0.1:{relaying_port}/mcp"
    servers = {
        "h": {"transport": "http", "url": url, "protocol": "legacy"},
        "h26": {"transport": "http", "url": url, "protocol": "modern"},
        "s26": {**STDIO, "env": {"PYTHONPATH": str(ROOT)}, "cwd": str(ROOT), "protocol": "modern"},
    }
    async with http_gateway(write_config(tmp_path_factory.mktemp("gw"), servers)) as base:
        yield base


@pytest.mark.parametrize(("mode", "server"), [*CALL_PAIRS, ("auto", "s26"), ("legacy", "s26")])
async def test_a_prompt_that_asks_the_client_is_answered_through_the_gateway(
    gateway: str, mode: str, server: str
) -> None:
    ann = Person("ann")
    async with http_client(gateway, mode=mode, **ann.callbacks()) as client:
        assert client.protocol_version == ERAS[mode]
        with anyio.fail_after(30):
            result = await client.get_prompt(f"{server}.asking_prompt")
    assert ann.asked == ["Whom should the prompt greet?"]
    assert [m.content for m in result.messages] == [types.TextContent(text="Hello, ann!")]


@pytest.mark.parametrize(("mode", "server"), [*CALL_PAIRS, ("auto", "s26"), ("legacy", "s26")])
async def test_a_resource_that_asks_the_client_is_answered_through_the_gateway(
    gateway: str, mode: str, server: str
) -> None:
    ann = Person("ann")
    async with http_client(gateway, mode=mode, **ann.callbacks()) as client:
        with anyio.fail_after(30):
            result = await client.read_resource(f"{server}+test://asking")
    assert len(ann.asked) == 1 and "What does the resource say?" in ann.asked[0]
    [contents] = result.contents
    assert isinstance(contents, types.TextResourceContents)
    assert contents.text == "sampled: ann" and contents.uri == f"{server}+test://asking"


async def test_a_2026_clients_retry_on_a_new_connection_answers_its_round(gateway: str) -> None:
    """The TypeScript SDK 2.x sends a round's retry on whatever connection its pool gives it (the client matrix saw
    every sampling and elicitation of its 2026-era HTTP rows refused): a round is the caller's, not its socket's."""
    ann = Person("ann")
    fresh = httpx2.Limits(max_keepalive_connections=0)  # every request on a new TCP connection
    async with httpx2.AsyncClient(limits=fresh, timeout=httpx2.Timeout(30, read=300)) as http:
        transport = streamable_http_client(f"{gateway}/mcp", http_client=http)
        async with Client(transport, mode="auto", **ann.callbacks()) as client:
            with anyio.fail_after(30):
                result = await client.call_tool("h.test_sampling", {"prompt": "new connection"})
                prompt = await client.get_prompt("h.asking_prompt")
    assert text_of(result) == "LLM response: ann"
    assert [m.content for m in prompt.messages] == [types.TextContent(text="Hello, ann!")]
    assert len(ann.asked) == 2


@pytest.mark.parametrize(("mode", "server"), CALL_PAIRS)
async def test_sampling_through_an_http_downstream_reaches_the_calling_client(
    gateway: str, mode: str, server: str
) -> None:
    ann = Person("ann")
    result = await call_as(ann, gateway, mode, f"{server}.test_sampling", {"prompt": "hello http"})
    assert text_of(result) == "LLM response: ann"
    assert len(ann.asked) == 1 and "hello http" in ann.asked[0]


@pytest.mark.parametrize(("mode", "server"), CALL_PAIRS)
async def test_a_form_elicitation_through_an_http_downstream_reaches_the_calling_client(
    gateway: str, mode: str, server: str
) -> None:
    ann = Person("ann")
    result = await call_as(ann, gateway, mode, f"{server}.test_elicitation", {"message": "over http?"})
    assert ann.asked == ["over http?"]
    assert '"response": "ann"' in text_of(result)


@pytest.mark.parametrize(("mode", "server"), CALL_PAIRS)
async def test_a_url_elicitation_through_an_http_downstream_reaches_the_calling_client(
    gateway: str, mode: str, server: str
) -> None:
    ann = Person("ann")
    async with http_client(gateway, mode=mode, **ann.callbacks()) as client:
        with anyio.fail_after(30):
            result = await client.call_tool(f"{server}.test_url_elicitation", {"id": f"http-{mode}"})
            await client.list_tools()  # a round trip: a notification sent before it has arrived
    [params] = ann.elicitations
    assert isinstance(params, types.ElicitRequestURLParams)
    assert params.url == f"https://example.test/auth/http-{mode}"
    assert text_of(result) == f"url elicitation http-{mode}: action=accept"
    # Only a handshake-era server announces the completion, to a handshake-era client (the 2026 era has none).
    assert ann.completed == ([f"http-{mode}"] if (mode, server) == ("legacy", "h") else [])


@pytest.mark.parametrize(("mode", "server"), CALL_PAIRS)
async def test_roots_through_an_http_downstream_are_the_calling_clients(gateway: str, mode: str, server: str) -> None:
    async with http_client(gateway, mode=mode, **Person("ann").callbacks()) as client:
        with anyio.fail_after(30):
            result = await client.call_tool(f"{server}.test_roots", {})
    assert text_of(result).startswith("roots: file:///work/ann;")


@pytest.mark.parametrize(("mode", "server"), PAIRS)
async def test_logs_of_a_call_on_an_http_downstream_reach_only_its_session(
    gateway: str, mode: str, server: str
) -> None:
    await logs_reach_only_the_caller(gateway, server, mode, level_logs=2)  # `h` answers each session's level


async def test_an_http_downstreams_resource_updates_reach_only_the_subscribed_handshake_session(gateway: str) -> None:
    await updates_reach_only_the_subscriber(gateway, f"h+{WATCHED}")


@pytest.mark.parametrize("server", ["h", "h26"])
async def test_an_http_downstreams_resource_updates_reach_only_the_2026_stream_that_listed_it(
    gateway: str, server: str
) -> None:
    await listen_streams_hear_only_their_uris(gateway, server)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_concurrent_sessions_are_each_asked_only_what_their_own_call_caused(gateway: str, mode: str) -> None:
    people = {name: Person(name) for name in ("ann", "bob")}
    results: dict[str, types.CallToolResult] = {}

    async def call(name: str) -> None:
        async with http_client(gateway, mode=mode, **people[name].callbacks()) as client:
            results[name] = await client.call_tool("h26.test_elicitation", {"message": f"for {name}"})

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:  # 2026-era rounds ride in each call's answer: exact
            for name in people:
                tg.start_soon(call, name)
    for name, person in people.items():
        assert person.asked == [f"for {name}"]
        assert f'"response": "{name}"' in text_of(results[name])


@pytest.mark.parametrize(
    ("mode", "callbacks", "declared"),
    [
        ("legacy", "none", ""),
        ("legacy", "all", "elicitation roots sampling"),
        ("auto", "elicitation", "elicitation"),
    ],
)
async def test_a_2026_downstream_is_offered_only_what_the_calling_client_can_answer(
    gateway: str, mode: str, callbacks: str, declared: str
) -> None:
    everything = Person("ann").callbacks()
    chosen = {
        "none": {},
        "all": everything,
        "elicitation": {"elicitation_callback": everything["elicitation_callback"]},
    }
    async with http_client(gateway, mode=mode, **chosen[callbacks]) as client:
        with anyio.fail_after(30):
            result = await client.call_tool("s26.test_capabilities", {})
    # The 2026 era declares capabilities per request: those the gateway could honour for this caller, no more.
    assert {"elicitation", "roots", "sampling"} & set(text_of(result).split()) == set(declared.split())
