"""A URL-mode elicitation's answer is passed on as its action only: what the user gives goes to the URL's page,
never through the client or the gateway, so content a client sends with it anyway (here a password) is not
forwarded. A handshake-era client asked by either era of server, and a 2026-era client asked by a handshake-era
server (the gateway asks it in an input round)."""

from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp.client.session import ClientRequestContext

from tests.downstreams.relay.clients import Person
from tests.downstreams.relay.test_relay_url_schemes import RELAYING
from tests.harness import http_client, http_gateway, text_of, write_config

pytestmark = pytest.mark.anyio


class Oversharing(Person):
    """A client that answers a URL-mode elicitation with content, as no client should."""

    async def elicit(self, ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        await super().elicit(ctx, params)
        return types.ElicitResult(action="accept", content={"password": "hunter2"})


@pytest.fixture(scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    servers = {"old": {**RELAYING, "protocol": "legacy"}, "new": {**RELAYING, "protocol": "modern"}}
    async with http_gateway(write_config(tmp_path_factory.mktemp("answers"), servers)) as base:
        yield base


@pytest.mark.parametrize(("mode", "server"), [("legacy", "old"), ("legacy", "new"), ("auto", "old")])
async def test_a_url_elicitation_s_answer_reaches_the_server_as_its_action_only(
    gateway: str, mode: str, server: str
) -> None:
    ann = Oversharing("ann")
    callbacks: dict[str, Any] = ann.callbacks()
    async with http_client(gateway, mode=mode, **callbacks) as client:
        with anyio.fail_after(30):
            result = await client.call_tool(f"{server}.test_url_elicitation", {"id": "sign-in"})
    assert len(ann.elicitations) == 1  # asked, with the URL
    said = text_of(result)
    assert said.startswith("url elicitation sign-in: action=accept"), said
    assert "hunter2" not in said and "content" not in said
