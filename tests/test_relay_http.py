"""The relay (DESIGN §15) through Streamable HTTP downstreams, in both client eras: the relaying fixture serves
`/mcp`, connected twice (`h`: handshake era, it pushes its requests; `h26`: 2026 era, it answers input-required),
plus over stdio in the 2026 era (`s26`). Prompts and resources that ask the client travel as tools/call's do."""

import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp.server.subscriptions import ResourceUpdated

from tests.harness import PYTHON, ROOT, http_client, http_gateway, port_file_server, text_of, wait_for, write_config
from tests.relay_clients import Person

WATCHED = "test://watched-resource"
STDIO: dict[str, Any] = {"transport": "stdio", "command": PYTHON, "args": ["-m", "tests.servers.relaying"]}
ERAS = {"legacy": "2025-11-25", "auto": "2026-07-28"}
# (client mode, server): a 2026-era client cannot be asked by a pushing (handshake-era) server, by the era's rules.
PAIRS = [("legacy", "h"), ("legacy", "h26"), ("auto", "h26")]

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def http_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    port_file = tmp_path_factory.mktemp("relaying") / "port"
    argv = [sys.executable, "-m", "tests.servers.relaying", "--transport", "sse", "--port-file", str(port_file)]
    with port_file_server(argv, port_file, cwd=str(ROOT)) as port:
        yield port


@pytest.fixture(scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory, http_port: int) -> AsyncIterator[str]:
    url = f"http://127.0.0.1:{http_port}/mcp"
    servers = {
        "h": {"transport": "http", "url": url, "protocol": "legacy"},
        "h26": {"transport": "http", "url": url, "protocol": "modern"},
        "s26": {**STDIO, "env": {"PYTHONPATH": str(ROOT)}, "cwd": str(ROOT), "protocol": "modern"},
    }
    async with http_gateway(write_config(tmp_path_factory.mktemp("gw"), servers)) as base:
        yield base


@pytest.mark.parametrize(("mode", "server"), [*PAIRS, ("auto", "s26"), ("legacy", "s26")])
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


@pytest.mark.parametrize(("mode", "server"), [*PAIRS, ("auto", "s26"), ("legacy", "s26")])
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


async def test_a_2026_client_gets_a_clear_error_when_a_pushing_server_asks_during_a_prompt(gateway: str) -> None:
    async with http_client(gateway, mode="auto", **Person("ann").callbacks()) as client:
        with anyio.fail_after(30), pytest.raises(Exception, match="2026-07-28 era"):
            await client.get_prompt("h.asking_prompt")
        assert (await client.list_prompts()).prompts  # the session goes on


@pytest.mark.parametrize(("mode", "server"), PAIRS)
async def test_sampling_through_an_http_downstream_reaches_the_calling_client(
    gateway: str, mode: str, server: str
) -> None:
    ann = Person("ann")
    async with http_client(gateway, mode=mode, **ann.callbacks()) as client:
        with anyio.fail_after(30):
            result = await client.call_tool(f"{server}.test_sampling", {"prompt": "hello http"})
    assert text_of(result) == "LLM response: ann"
    assert len(ann.asked) == 1 and "hello http" in ann.asked[0]


@pytest.mark.parametrize(("mode", "server"), PAIRS)
async def test_a_form_elicitation_through_an_http_downstream_reaches_the_calling_client(
    gateway: str, mode: str, server: str
) -> None:
    ann = Person("ann")
    async with http_client(gateway, mode=mode, **ann.callbacks()) as client:
        with anyio.fail_after(30):
            result = await client.call_tool(f"{server}.test_elicitation", {"message": "over http?"})
    assert ann.asked == ["over http?"]
    assert '"response": "ann"' in text_of(result)


@pytest.mark.parametrize(("mode", "server"), PAIRS)
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
    # Only a handshake-era server announces the completion (the 2026 era has no such notification).
    assert ann.completed == ([f"http-{mode}"] if server == "h" else [])


@pytest.mark.parametrize(("mode", "server"), PAIRS)
async def test_roots_through_an_http_downstream_are_the_calling_clients(gateway: str, mode: str, server: str) -> None:
    async with http_client(gateway, mode=mode, **Person("ann").callbacks()) as client:
        with anyio.fail_after(30):
            result = await client.call_tool(f"{server}.test_roots", {})
    assert text_of(result).startswith("roots: file:///work/ann;")


@pytest.mark.parametrize(("mode", "server"), [("legacy", "h"), ("legacy", "h26"), ("auto", "h26")])
async def test_logs_of_a_call_on_an_http_downstream_reach_only_its_session(
    gateway: str, mode: str, server: str
) -> None:
    ann, bob = Person("ann"), Person("bob")
    # A 2026-era client opts in per request (`log_level`); a handshake-era one with logging/setLevel.
    level: dict[str, Any] = {"log_level": "info"} if mode == "auto" else {}
    async with (
        http_client(gateway, mode=mode, **ann.callbacks(), **level) as ann_client,
        http_client(gateway, mode=mode, **bob.callbacks(), **level) as bob_client,
    ):
        with anyio.fail_after(30):
            if mode == "legacy":
                for client in (ann_client, bob_client):
                    request = types.SetLevelRequest(params=types.SetLevelRequestParams(level="info"))
                    await client.session.send_request(request, types.EmptyResult)
                # `h` answers each level with a log on its standalone stream, which may trail the answer (and
                # reach either session): both are in before the call whose logs are counted.
                await wait_for(lambda: sum(str(g.data).startswith("Log level set") for g in ann.logs + bob.logs) == 2)
            ann.logs.clear()
            bob.logs.clear()
            await ann_client.call_tool(f"{server}.test_tool_with_logging", {})
            await bob_client.list_tools()  # a round trip: anything sent to bob before it has arrived
    assert [log.data for log in ann.logs] == [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ]
    assert {log.logger for log in ann.logs} == {server}
    assert bob.logs == []


async def test_an_http_downstreams_resource_updates_reach_only_the_subscribed_handshake_session(gateway: str) -> None:
    ann, bob = Person("ann"), Person("bob")
    uri = f"h+{WATCHED}"
    async with (
        http_client(gateway, mode="legacy", **ann.callbacks()) as ann_client,
        http_client(gateway, mode="legacy", **bob.callbacks()) as bob_client,
    ):
        with anyio.fail_after(30):
            # The fixture announces an update of a resource as soon as it is subscribed to.
            await ann_client.session.send_request(
                types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri)), types.EmptyResult
            )
            await ann.got_update.wait()
            await bob_client.list_tools()
            await ann_client.session.send_request(
                types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=uri)), types.EmptyResult
            )
    assert ann.updated == [uri] and bob.updated == []


@pytest.mark.parametrize("server", ["h", "h26"])
async def test_an_http_downstreams_resource_updates_reach_only_the_2026_stream_that_listed_it(
    gateway: str, server: str
) -> None:
    watched, other = f"{server}+{WATCHED}", f"{server}+test://static-text"
    async with (
        http_client(gateway, mode="auto") as ann,
        http_client(gateway, mode="auto") as bob,
        ann.listen(resource_subscriptions=[watched]) as ann_stream,
        bob.listen(resource_subscriptions=[other]) as bob_stream,
    ):
        with anyio.fail_after(30):
            await ann.call_tool(f"{server}.touch", {"uri": WATCHED})
            event = await ann_stream.__anext__()
            await bob.call_tool(f"{server}.touch", {"uri": "test://static-text"})
            bobs = await bob_stream.__anext__()  # bob's own touch: his first event is his URI, not ann's
    assert isinstance(event, ResourceUpdated) and event.uri == watched
    assert isinstance(bobs, ResourceUpdated) and bobs.uri == other


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
