"""Input rounds the gateway answers for a handshake-era client: a 2026-era server that asks again whatever it is
answered gives up after `MAX_ROUNDS`, saying what it asked last and what the client answered."""

from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.downstreams.relay.clients import Person
from tests.downstreams.relay.test_relay_url_schemes import RELAYING
from tests.harness import connected, text_of, write_config

pytestmark = pytest.mark.anyio


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
