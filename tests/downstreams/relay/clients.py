"""The relay tests' client (DESIGN §15): real `mcp.Client` callbacks that answer with the person's name and
remember what they were asked and told; and the scenarios run against several kinds of downstream."""

from typing import Any

import anyio
import mcp.types as types
from mcp.client.session import ClientRequestContext
from mcp.server.subscriptions import ResourceUpdated

from tests.harness import http_client, wait_for

WATCHED = "test://watched-resource"


class Person:
    """One client's callbacks: answers elicitation, sampling and roots with its own name, remembers what it was
    asked (`asked`: the messages; `elicitations`: the whole requests) and told (logs, updates, completions)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.asked: list[str] = []
        self.elicitations: list[types.ElicitRequestParams] = []
        self.logs: list[types.LoggingMessageNotificationParams] = []
        self.updated: list[str] = []
        self.completed: list[str] = []
        self.got_update = anyio.Event()
        self.got_log = anyio.Event()

    async def elicit(self, ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params.message)
        self.elicitations.append(params)
        if isinstance(params, types.ElicitRequestURLParams):  # out of band: nothing to fill in
            return types.ElicitResult(action="accept")
        return types.ElicitResult(action="accept", content={"response": self.name})

    async def sample(self, ctx: ClientRequestContext, params: types.CreateMessageRequestParams) -> Any:
        self.asked.append(str(params.messages[0].content))
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text=self.name), model="m")

    async def roots(self, ctx: ClientRequestContext) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=f"file:///work/{self.name}", name=self.name)])

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)
        self.got_log.set()

    async def message(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.updated.append(message.params.uri)
            self.got_update.set()
        elif isinstance(message, types.ElicitCompleteNotification):
            self.completed.append(message.params.elicitation_id)

    def callbacks(self) -> dict[str, Any]:
        return {
            "elicitation_callback": self.elicit,
            "sampling_callback": self.sample,
            "list_roots_callback": self.roots,
            "logging_callback": self.log,
            "message_handler": self.message,
        }


async def call_as(
    person: Person, gateway: str, mode: str, tool: str, arguments: dict[str, Any]
) -> types.CallToolResult:
    """One tool call from a new client session of `person`'s (who answers whatever the call asks), bounded in time."""
    async with http_client(gateway, mode=mode, **person.callbacks()) as client:
        with anyio.fail_after(30):
            return await client.call_tool(tool, arguments)


# -- scenarios run against several downstreams (tests/test_relay.py, test_relay_http.py) -----------------


async def updates_reach_only_the_subscriber(gateway: str, uri: str) -> None:
    """Two handshake-era sessions; one subscribes to `uri` (an exposed URI of a relaying fixture, which announces
    an update as soon as it is subscribed to): the update reaches it with that URI, and not the other."""
    ann, bob = Person("ann"), Person("bob")
    async with (
        http_client(gateway, mode="legacy", **ann.callbacks()) as ann_client,
        http_client(gateway, mode="legacy", **bob.callbacks()) as bob_client,
    ):
        with anyio.fail_after(30):
            await ann_client.session.send_request(
                types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri)), types.EmptyResult
            )
            await ann.got_update.wait()
            await bob_client.list_tools()  # a round trip: anything sent to bob before it has arrived
            await ann_client.session.send_request(
                types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=uri)), types.EmptyResult
            )
    assert ann.updated == [uri] and bob.updated == []


async def listen_streams_hear_only_their_uris(gateway: str, server: str) -> None:
    """Two 2026-era listen streams on different resources of `server`: each hears only its own."""
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


async def logs_reach_only_the_caller(gateway: str, server: str, mode: str, level_logs: int) -> None:
    """Two sessions opt in to logs (2026 era: per request; handshake era: logging/setLevel, which the gateway's
    `level_logs` handshake-era servers answer with a log of their own); one calls a tool that logs: only it
    hears the logs, named by the server."""
    ann, bob = Person("ann"), Person("bob")
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
                # A server may send that log on its standalone stream, trailing its answer (and reaching either
                # session): all are in before the call whose logs are counted.
                await wait_for(lambda: _said("Log level set", ann, bob) == level_logs)
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


def _said(start: str, *people: Person) -> int:
    return sum(str(log.data).startswith(start) for person in people for log in person.logs)
