"""The forwards beyond listing and reading (`Features`), in process against real servers behind real Clients:
resource subscriptions asked of a server once however many sessions watch (the first subscribes, the last leaves,
a session ending leaves for it), refused with what to do by a server that offers none.

The tool-call path (`relayed`: input rounds, the owner stamp) takes the pipeline's `Call`, which issue 31's `door`
is rewriting: its in-process tests come with that; through a gateway it is tests/downstreams/relay/'s. And input rounds
the gateway answers for a handshake-era client: a 2026-era server that asks again whatever it is answered gives up
after `MAX_ROUNDS`, saying what it asked last and what the client answered."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from gateway.downstreams.downstream import Downstream
from gateway.downstreams.relay import Relay
from gateway.errors import RequestRejected
from gateway.routing.features import Features
from gateway.routing.uris import Uris
from gateway.session import ANONYMOUS, Identity
from tests.downstreams.relay.clients import Person
from tests.downstreams.relay.test_relay_url_schemes import RELAYING
from tests.harness import connected, text_of, wait_for, write_config
from tests.servers.conformance import Fixtures
from tests.servers.kitchen import Kitchen

pytestmark = pytest.mark.anyio

URI = "test://static-text"
WHO: tuple[Identity, dict[str, str]] = (ANONYMOUS, {})


@asynccontextmanager
async def features(server: Any) -> AsyncIterator[tuple[Features, Relay]]:
    relay = Relay(logger_name=lambda server, name: server)
    async with Downstream("c", lambda: server, protocol="legacy").running() as ds:
        with anyio.fail_after(10):
            await ds.settled()
        yield Features({"c": ds}, Uris(["c"]), relay), relay


async def test_a_resource_is_subscribed_once_by_its_first_watcher_and_left_by_its_last() -> None:
    fixtures = Fixtures()
    async with features(fixtures.server) as (routing, _):
        with anyio.fail_after(10):
            await routing.watch("s1", "c", URI, True, WHO)
            assert fixtures.subscribed == {URI}
            await routing.watch("s2", "c", URI, True, WHO)
            await routing.watch("s1", "c", URI, False, WHO)
            assert fixtures.subscribed == {URI}  # s2 still watches
            await routing.watch("s2", "c", URI, False, WHO)
    assert fixtures.subscribed == set()


async def test_a_session_that_ends_leaves_what_only_it_watched() -> None:
    fixtures = Fixtures()
    async with features(fixtures.server) as (routing, relay):
        with anyio.fail_after(10):
            await routing.watch("s1", "c", URI, True, WHO)
            for exposed, audience in relay.forget("s1"):  # what the front does when a session ends
                routing.release(exposed, audience)
            await wait_for(lambda: not fixtures.subscribed, what="the server to be left")
    routing.release("gone+x://y", None)  # a server a reload dropped: nothing to leave, nothing raised


async def test_a_server_without_subscriptions_refuses_saying_to_read_again() -> None:
    async with features(Kitchen("c", None, 0, []).server) as (routing, _):
        with pytest.raises(RequestRejected) as refused:
            await routing.watch("s1", "c", "note://hello", True, WHO)
    assert str(refused.value) == (
        "Server 'c' offers no resource subscriptions, so 'c+note://hello' cannot be watched; "
        "read the resource again when you need it fresh."
    )


async def test_rounds_that_cannot_converge_say_what_was_asked_and_what_came_back(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"new": {**RELAYING, "protocol": "modern"}})
    ann = Person("ann")
    async with connected(config) as (gateway, _):
        async with Client(gateway.front.server, mode="legacy", **ann.callbacks()) as client:
            with anyio.fail_after(60):
                result = await client.call_tool("new.test_never_satisfied", {})
    said = text_of(result)
    assert result.is_error
    assert len(ann.asked) == 10  # asked each round, answered each time
    assert "still asked for input after 10 rounds" in said
    assert "who-round-11: elicitation/create" in said  # what the server asked last
    assert "who-round-10: elicitation accept" in said  # what the client had answered
    assert "ann" not in said  # the answers' contents are the user's, not the error's
