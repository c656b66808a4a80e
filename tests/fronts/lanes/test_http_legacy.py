"""The HTTP lane for handshake-era (2025-11-25) sessions: a session's plain tools/call answered as the SDK
answers it, cancellation by notification, and everything else (unknown sessions, other methods,
malformed calls) still answered by the SDK."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.fronts.lanes.test_http import answer
from tests.harness import http_client, http_gateway, kitchen, text_of, wait_for, write_config

pytestmark = pytest.mark.anyio

VERSION = "2025-11-25"
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def call(name: str, arguments: dict[str, Any], request_id: int = 7, **meta: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


@asynccontextmanager
async def legacy_session(
    base: str, auth: dict[str, str] | None = None
) -> AsyncIterator[tuple[httpx2.AsyncClient, dict[str, str]]]:
    """A raw HTTP client that opened a 2025-11-25 session; yields it and the headers its requests carry."""
    async with httpx2.AsyncClient(base_url=base, timeout=30, headers=auth) as http:
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
        }
        opened = await http.post("/mcp", json=init, headers=ACCEPT)
        assert answer(opened)["result"]["protocolVersion"] == VERSION
        session = {**ACCEPT, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": VERSION}
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await http.post("/mcp", json=initialized, headers=session)).status_code == 202
        yield http, session


async def test_a_session_s_plain_tools_call_is_answered_by_the_lane_as_the_sdk_answers_it(kitchen_gateway: str) -> None:
    async with legacy_session(kitchen_gateway) as (http, session):
        await http.post("/mcp", json=call("k.echo", {"text": "first"}), headers=session)  # bootstrap
        plain = await http.post("/mcp", json=call("k.echo", {"text": "hi"}), headers=session)
        # A progress token needs the SSE stream, so this one is served by the SDK.
        via_sdk = await http.post("/mcp", json=call("k.echo", {"text": "hi"}, progressToken="p"), headers=session)
    assert plain.status_code == 200 and plain.headers["content-type"] == "application/json"
    assert plain.headers["mcp-session-id"] == session["mcp-session-id"]
    assert via_sdk.headers["content-type"].startswith("text/event-stream")
    lane, sdk = answer(plain), answer(via_sdk)
    assert lane == sdk
    assert lane["result"] == {"content": [{"type": "text", "text": "hi"}], "isError": False}


async def test_unknown_and_ended_sessions_get_the_sdk_s_404(kitchen_gateway: str) -> None:
    async with legacy_session(kitchen_gateway) as (http, session):
        unknown = await http.post(
            "/mcp", json=call("k.echo", {"text": "hi"}), headers={**session, "mcp-session-id": "f" * 32}
        )
        assert (await http.delete("/mcp", headers=session)).status_code == 200
        ended = await http.post("/mcp", json=call("k.echo", {"text": "hi"}), headers=session)
    assert unknown.status_code == 404
    assert ended.status_code == 404


async def test_a_session_s_calls_are_served_only_to_the_identity_that_opened_it(tmp_path: Path) -> None:
    alice, bob = "alice-token-0123456789", "bob-token-0123456789ab"
    auth = {"tokens": [{"name": "alice", "token": alice}, {"name": "bob", "token": bob}]}
    config = write_config(tmp_path, {"k": kitchen("k")}, auth=auth)
    async with (
        http_gateway(config) as base,
        legacy_session(base, {"authorization": f"Bearer {alice}"}) as (http, session),
    ):
        # The first call may overtake the `initialized` notification (answered 202 before it is handled), and
        # until then the session takes the SDK path; the second one is the lane's.
        await http.post("/mcp", json=call("k.echo", {"text": "first"}), headers=session)
        as_bob = await http.post(
            "/mcp", json=call("k.echo", {"text": "hi"}), headers={**session, "authorization": f"Bearer {bob}"}
        )
        as_alice = await http.post("/mcp", json=call("k.echo", {"text": "hi"}), headers=session)
    assert as_bob.status_code == 404  # as the SDK answers: as if the session did not exist
    assert as_alice.status_code == 200 and as_alice.headers["content-type"] == "application/json"


async def test_other_requests_of_a_session_still_reach_the_sdk(kitchen_gateway: str) -> None:
    async with legacy_session(kitchen_gateway) as (http, session):
        listed = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, headers=session)
        nameless = await http.post(
            "/mcp", json={"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {}}, headers=session
        )
        broken = await http.post("/mcp", content=b'{"jsonrpc": "2.0", "id": 5, "meth', headers=session)
        after = await http.post("/mcp", json=call("k.echo", {"text": "still"}), headers=session)
    assert "k.echo" in {tool["name"] for tool in answer(listed)["result"]["tools"]}
    assert answer(nameless)["error"]["code"] == -32602
    assert broken.status_code == 400 and answer(broken)["error"]["code"] == -32700
    assert answer(after)["result"]["content"][0]["text"] == "still"


async def test_a_legacy_client_cancelling_a_call_cancels_it_downstream(tmp_path: Path) -> None:
    events = tmp_path / "events.log"
    config = write_config(tmp_path, {"k": kitchen("k", events=events)})
    async with http_gateway(config) as base, http_client(base, mode="legacy") as client:
        assert client.protocol_version == VERSION
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "k.slow", {"steps": 100, "delay_s": 0.1})
            await wait_for(lambda: events.exists() and "call slow" in events.read_text(), what="slow started")
            tg.cancel_scope.cancel()
        await wait_for(lambda: "cancelled slow" in events.read_text(), within_s=10, what="downstream cancelled")
        assert text_of(await client.call_tool("k.echo", {"text": "after"})) == "after"


@pytest.mark.parametrize("path", ["lane", "sdk"])
async def test_a_cancelled_call_gets_no_answer_on_either_path(tmp_path: Path, path: str) -> None:
    events = tmp_path / "events.log"
    config = write_config(tmp_path, {"k": kitchen("k", events=events)})
    replies: list[httpx2.Response] = []
    meta: dict[str, Any] = {"progressToken": "p"} if path == "sdk" else {}  # a progress token: the SDK serves it
    async with http_gateway(config) as base, legacy_session(base) as (http, session):

        async def slow() -> None:
            slow = call("k.slow", {"steps": 100, "delay_s": 0.1}, **meta)
            replies.append(await http.post("/mcp", json=slow, headers=session))

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(slow)
                await wait_for(lambda: events.exists() and "call slow" in events.read_text(), what="slow started")
                cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
                assert (await http.post("/mcp", json=cancel, headers=session)).status_code == 202
        await wait_for(lambda: "cancelled slow" in events.read_text(), within_s=10, what="downstream cancelled")
        after = await http.post("/mcp", json=call("k.echo", {"text": "after"}, request_id=8), headers=session)
    # The spec: a cancelled request is not answered. Its POST's SSE stream ends without a message for it.
    [reply] = replies
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/event-stream")
    assert '"id":7' not in reply.text.replace(" ", ""), reply.text
    assert answer(after)["result"]["content"][0]["text"] == "after"  # the session goes on
