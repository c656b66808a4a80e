"""The one builder of the gateway's in-process servers: each call's arguments are checked against the schema its
tool declares before the handler runs, the caller's owner reaches the handler from `_meta` only, and what is
refused is worded by the server that refuses it; driven through a real `mcp.Client` over memory streams."""

from typing import Annotated, Any, cast

import mcp.types as types
import pytest
from mcp import Client
from mcp.types import RequestParamsMeta
from pydantic import Field

from gateway.hosted import inprocess
from gateway.hosted.contracts import Arguments, tool
from gateway.hosted.inprocess import Hosted, Refusals
from gateway.results import text_result
from gateway.session import OWNER_META_KEY, SESSION_META_KEY, Origin
from tests.harness import text_of

pytestmark = pytest.mark.anyio


class Echo(Arguments):
    text: Annotated[str, Field(max_length=10)]


ECHO = tool("echo", "Echo text back.", Echo)
LATER = tool("later", "Answered before this server (by a middleware).", Echo)
SEEN: list[tuple[Origin, Any]] = []


async def echo(origin: Origin, args: Echo) -> types.CallToolResult:
    SEEN.append((origin, args))
    return text_result(f"{origin.owner}: {args.text}")


def server() -> Any:
    refusals = Refusals(
        unknown=lambda name: text_result(f"no {name}", error=True),
        invalid=lambda exc: text_result(f"bad: {exc.text()}", error=True),
    )
    return inprocess.build("demo", [Hosted(ECHO, Echo, echo)], refusals, also_listed=[LATER])


async def test_the_server_lists_its_tools_and_those_answered_before_it() -> None:
    async with Client(server()) as client:
        listed = await client.list_tools()
    assert [t.name for t in listed.tools] == ["echo", "later"]
    assert listed.tools[0].input_schema["properties"]["text"]["maxLength"] == 10


async def test_a_call_reaches_its_handler_with_checked_arguments_and_whose_call_it_is_from_meta() -> None:
    SEEN.clear()
    meta = cast(RequestParamsMeta, {OWNER_META_KEY: "owner-1", SESSION_META_KEY: "session-1"})
    async with Client(server()) as client:
        owned = await client.call_tool("echo", {"text": "hi"}, meta=meta)
        anonymous = await client.call_tool("echo", {"text": "hi"})
    assert (text_of(owned), text_of(anonymous)) == ("owner-1: hi", "None: hi")
    assert [(origin, args.text) for origin, args in SEEN] == [
        (Origin("owner-1", "session-1"), "hi"),
        (Origin(None, None), "hi"),
    ]


async def test_arguments_off_the_schema_are_refused_in_the_servers_words_before_the_handler_runs() -> None:
    SEEN.clear()
    async with Client(server()) as client:
        long = await client.call_tool("echo", {"text": "x" * 11})
        missing = await client.call_tool("echo", {})
    assert long.is_error and missing.is_error
    assert text_of(long).startswith("bad: ") and "demo.echo" in text_of(long) and "10" in text_of(long)
    assert "text" in text_of(missing)
    assert SEEN == []


async def test_a_tool_the_server_does_not_answer_is_refused_in_its_words() -> None:
    async with Client(server()) as client:
        later = await client.call_tool("later", {"text": "hi"})
        unknown = await client.call_tool("nope", {})
    assert (text_of(later), text_of(unknown)) == ("no later", "no nope")
    assert later.is_error and unknown.is_error
