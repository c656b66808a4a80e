"""Input rounds for 2026-era clients: a server's request mid-call parks the call, the retry answers it, a round
nobody answers is forgotten, and only the identity that started a round can answer it. (Through real servers and
clients: tests/downstreams/relay/test_relay_http.py, the `auto-h` cases.)"""

from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import MCPError

from gateway.fronts.rounds import PREFIX, Rounds
from gateway.inflight import Peer

pytestmark = pytest.mark.anyio

ROOTS = types.ListRootsRequest()


def peer() -> Peer:
    return Peer("ann", None, None, types.ClientCapabilities(roots=types.RootsCapability()), modern=True)


@pytest.fixture
async def rounds() -> AsyncIterator[Rounds]:
    async with Rounds().running() as bound:
        yield bound


def asking(client: Peer, timeout_s: float = 30, ended: anyio.Event | None = None) -> Any:
    """A call whose server asks the client for its roots, then answers with what it got (or why not); `ended` is
    set as it returns (nothing after it awaits: once a waiter wakes, the round is settled)."""

    async def call() -> types.CallToolResult:
        assert client.ask_client is not None
        try:
            answer = await client.ask_client(ROOTS, timeout_s)
        except MCPError as exc:
            answer = f"refused: {exc.error.message}"
        if ended is not None:
            ended.set()
        return types.CallToolResult(content=[types.TextContent(text=f"roots: {answer}")])

    return call


async def test_a_request_mid_call_is_an_input_round_and_the_retry_gets_the_result(rounds: Rounds) -> None:
    client = peer()
    with anyio.fail_after(10):
        first = await rounds.call("ann", client, None, asking(client))
        assert isinstance(first, types.InputRequiredResult) and first.request_state is not None
        assert first.request_state.startswith(PREFIX) and len(rounds) == 1
        [(ident, request)] = (first.input_requests or {}).items()
        assert request == ROOTS
        answers = {"inputResponses": {ident: {"roots": []}}, "requestState": first.request_state}
        final = await rounds.call("ann", client, answers, asking(client))
    assert isinstance(final, types.CallToolResult)
    assert final.content == [types.TextContent(text="roots: {'roots': []}")]
    assert len(rounds) == 0


async def test_a_round_nobody_answers_ends_with_the_servers_timeout_and_is_forgotten(rounds: Rounds) -> None:
    client, ended = peer(), anyio.Event()
    with anyio.fail_after(10):
        first = await rounds.call("ann", client, None, asking(client, 0.05, ended))
        assert isinstance(first, types.InputRequiredResult) and first.request_state is not None
        await ended.wait()
        assert len(rounds) == 0
        late = {"inputResponses": {"gateway-1": {"roots": []}}, "requestState": first.request_state}
        with pytest.raises(MCPError, match="names no waiting call of this client"):
            await rounds.call("ann", client, late, asking(client))


async def test_only_the_identity_that_started_a_round_can_answer_it(rounds: Rounds) -> None:
    client = peer()
    with anyio.fail_after(10):
        first = await rounds.call("ann", client, None, asking(client))
        assert isinstance(first, types.InputRequiredResult) and first.request_state is not None
        stolen = {"inputResponses": {"gateway-1": {"roots": []}}, "requestState": first.request_state}
        with pytest.raises(MCPError, match="names no waiting call"):
            await rounds.call("bob", peer(), stolen, asking(client))
        assert len(rounds) == 1  # still ann's to answer


async def test_a_2026_state_of_the_servers_own_passes_through_to_the_call(rounds: Rounds) -> None:
    async def call() -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text="server's own round")])

    result = await rounds.call("ann", peer(), {"requestState": "opaque-server-state"}, call)
    assert isinstance(result, types.CallToolResult) and len(rounds) == 0


async def test_the_requests_own_error_reaches_the_client_as_it_is(rounds: Rounds) -> None:
    """A prompt or a read answers with an error (an unknown prompt): the client gets that error, not a round's."""

    async def unknown() -> types.GetPromptResult:
        raise MCPError(code=types.INVALID_PARAMS, message="Unknown prompt: nope")

    with anyio.fail_after(10), pytest.raises(MCPError, match="Unknown prompt: nope"):
        await rounds.call("ann", peer(), None, unknown)
    assert len(rounds) == 0
