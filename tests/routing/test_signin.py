"""A call that needs its caller to sign in to an OAuth server asks a client that declared URL-mode elicitation to
open the sign-in link (`gateway.routing.signin`), waits for the sign-in, and goes on as that person; a client that
declines keeps the text answer. A real HTTP gateway in front of the guarded authorization server and MCP server
(`tests/servers/guarded.py`); the client's browser is httpx following the link (the server approves alice at once)."""

import json
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import anyio.abc
import httpx2
import mcp.types as types
import pytest
from cryptography.fernet import Fernet
from mcp.client.session import ClientRequestContext

from tests.harness import http_client, http_gateway, text_of, write_config
from tests.servers.guarded import serving

pytestmark = pytest.mark.anyio
ALICE = {"authorization": "Bearer alice-secret-0123456789"}


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving(tmp_path_factory.mktemp("guarded")) as base:
        yield base


@pytest.fixture
async def gateway(guarded: str, tmp_path: Path) -> AsyncIterator[str]:
    server = {"transport": "http", "url": f"{guarded}/mcp", "auth": {"type": "oauth"}}
    tokens = [{"name": "alice", "token": "alice-secret-0123456789"}]
    config = write_config(
        tmp_path, {"forge": server}, auth={"tokens": tokens}, think={"state_dir": str(tmp_path / "state")}
    )
    async with http_gateway(config, env={"GATEWAY_TOKEN_KEY": Fernet.generate_key().decode()}) as base:
        yield base


class Person:
    """A client's user: agrees to open a URL-mode elicitation's link (or declines), and their browser follows it
    after the client has answered, as a client that opens a browser does."""

    def __init__(self, tg: anyio.abc.TaskGroup, action: str = "accept") -> None:
        self.tg, self.action = tg, action
        self.asked: list[types.ElicitRequestURLParams] = []
        self.pages: list[str] = []
        self.completed: list[str] = []

    async def elicit(self, ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestURLParams), params
        self.asked.append(params)
        if self.action == "accept":
            self.tg.start_soon(self.browse, params.url)
        return types.ElicitResult(action=self.action)

    async def browse(self, url: str) -> None:
        async with httpx2.AsyncClient(follow_redirects=True) as browser:  # keeps the sign-in's cookie
            self.pages.append((await browser.get(url)).text)

    async def message(self, message: object) -> None:
        if isinstance(message, types.ElicitCompleteNotification):
            self.completed.append(message.params.elicitation_id)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_client_that_declared_url_elicitation_is_asked_to_sign_in_and_the_same_call_goes_on_as_them(
    gateway: str, mode: str
) -> None:
    with anyio.fail_after(90):
        async with anyio.create_task_group() as tg:
            person = Person(tg)
            async with http_client(
                gateway, mode=mode, headers=ALICE, elicitation_callback=person.elicit, message_handler=person.message
            ) as client:
                result = await client.call_tool("forge.whoami", {})
                assert not result.is_error, text_of(result)
                assert json.loads(text_of(result)) == {"user": "alice"}
                [asked] = person.asked
                assert re.fullmatch(rf"{gateway}/connect/forge\?ticket=\S+", asked.url), asked.url
                assert "Sign in to forge" in asked.message
                assert "Signed in as alice" in person.pages[0]
                if mode == "legacy":  # a 2026-era client has no channel for the notification
                    assert person.completed == [asked.elicitation_id]
                again = await client.call_tool("forge.whoami", {})  # signed in: nothing asked any more
                assert json.loads(text_of(again)) == {"user": "alice"} and len(person.asked) == 1


async def test_a_client_whose_person_declines_gets_the_text_that_says_where_to_sign_in(gateway: str) -> None:
    with anyio.fail_after(90):
        async with anyio.create_task_group() as tg:
            person = Person(tg, action="decline")
            async with http_client(gateway, mode="legacy", headers=ALICE, elicitation_callback=person.elicit) as client:
                result = await client.call_tool("forge.whoami", {})
        answer = "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))
        assert result.is_error and len(person.asked) == 1
        assert re.search(r"Sign in to forge: \S+/connect/forge\?ticket=\S+ — then call again", answer), answer
