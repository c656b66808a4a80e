"""A handshake-era server's request during a 2026-era client's call (a tool call, `prompts/get`, `resources/read`),
asked as an input-required result (DESIGN §15).

The 2026 era has no server-to-client requests: a server that needs sampling, elicitation or roots answers the
call `input_required`, and the client retries the call with `inputResponses` and the `requestState` it got. A
handshake-era server instead sends its request mid-call and waits for the answer. The bridge: such a client's
call runs in the background (`Rounds.bind`: the gateway's task group); the server's request ends the client's
request with an input-required result whose `requestState` names the parked call; the retry (same session)
hands the answers to the waiting server requests and waits again, for the call's result or its next request.
A round the client never answers ends when the server's request times out (the relay's bound); the parked
call then finishes, and is forgotten. A round belongs to the identity that started it, not to the connection it came
on: a 2026-era client has no session, and its retry may come on a new TCP connection (the TypeScript SDK's does).
"""

import itertools
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import anyio
import anyio.abc
import mcp.types as types
from mcp import MCPError

from gateway.inflight import Peer

logger = logging.getLogger(__name__)

PREFIX = "gateway-round:"
"""The gateway's `requestState`s start so; any other belongs to a 2026-era server and passes through."""
R = TypeVar("R", bound=types.Result)


@dataclass(slots=True, eq=False)
class _Ask:
    """One request of the server, waiting for the client's answer."""

    request: Any
    answered: anyio.Event = field(default_factory=anyio.Event)
    answer: Any = None


class _Round:
    """One client call running in the background, and what its server asked that the client has not answered."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.token = PREFIX + secrets.token_urlsafe(18)
        self.asks: dict[str, _Ask] = {}
        self._ids = itertools.count(1)
        self.result: types.Result | None = None
        self.error: MCPError | None = None
        """The request's own error (an unknown prompt, a failed read): the client's answer, as the result is."""
        self.done = anyio.Event()
        self._news = anyio.Event()
        """Set (and replaced) when the server asks something or the call ends: a waiting client request looks."""
        self.scope = anyio.CancelScope()

    async def ask(self, request: Any, timeout_s: float) -> Any:
        """The relay's way to ask the client (`Peer.ask_client`): its answer, as the wire dict it sent."""
        ident = f"gateway-{next(self._ids)}"
        ask = self.asks[ident] = _Ask(request)
        self._tell()
        with anyio.move_on_after(timeout_s):
            await ask.answered.wait()
        self.asks.pop(ident, None)
        if not ask.answered.is_set():
            raise MCPError(code=types.REQUEST_TIMEOUT, message=f"the client did not answer within {timeout_s:g} s")
        return ask.answer

    def answer(self, responses: dict[str, Any]) -> None:
        for ident, response in responses.items():
            ask = self.asks.get(ident)
            if ask is not None and not ask.answered.is_set():
                ask.answer = response
                ask.answered.set()

    async def run(self, call: Callable[[], Awaitable[types.Result]]) -> None:
        with self.scope:
            try:
                self.result = await call()
            except MCPError as exc:
                self.error = exc
            finally:
                self.done.set()
                self._tell()

    def _tell(self) -> None:
        self._news.set()
        self._news = anyio.Event()

    async def next(self) -> types.Result:
        """The call's result, or an input-required result naming every request its server is waiting on."""
        while not self.done.is_set():
            pending = {ident: ask.request for ident, ask in self.asks.items() if not ask.answered.is_set()}
            if pending:
                return types.InputRequiredResult(input_requests=pending, request_state=self.token)
            await self._news.wait()
        if self.error is not None:
            raise self.error
        if self.result is None:  # the call was cancelled (the client went away mid-round)
            raise MCPError(code=types.INTERNAL_ERROR, message="the call was cancelled before it finished")
        return self.result


class Rounds:
    """The parked rounds of 2026-era clients' calls whose handshake-era servers asked something."""

    def __init__(self) -> None:
        self._tg: anyio.abc.TaskGroup | None = None
        self._parked: dict[str, _Round] = {}

    @asynccontextmanager
    async def running(self) -> AsyncIterator["Rounds"]:
        """Calls run in a task group of its own while inside; outside, a 2026-era client is not asked."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                yield self
            finally:
                self._tg = None
                tg.cancel_scope.cancel()

    def __len__(self) -> int:
        return len(self._parked)

    async def call(
        self, key: str, peer: Peer, rounds: dict[str, Any] | None, call: Callable[[], Awaitable[R]]
    ) -> R | types.InputRequiredResult:
        """`call` for `key`'s (the caller's identity) 2026-era request, its server's requests asked as input-required
        results; `rounds`: the request's `inputResponses` and `requestState`, answering a parked round when ours
        (whose result is of the kind the parked request's `call` gives: the client retries the same request)."""
        if ours(rounds):
            state = str((rounds or {})["requestState"])
            parked = self._parked.get(state)
            if parked is None or parked.key != key:  # another identity's round stays its own
                raise MCPError(
                    code=types.INVALID_PARAMS,
                    message=f"requestState {state[:40]!r} names no waiting call of this client (its server stopped "
                    "waiting, or it was answered already); call the tool again without inputResponses",
                )
            del self._parked[state]
            parked.answer((rounds or {}).get("inputResponses") or {})
            return cast(R | types.InputRequiredResult, await self._next(parked))
        if self._tg is None:
            return await call()
        round_ = _Round(key)
        peer.ask_client = round_.ask
        self._tg.start_soon(self._run, round_, call)
        return cast(R | types.InputRequiredResult, await self._next(round_))

    async def _run(self, round_: _Round, call: Callable[[], Awaitable[types.Result]]) -> None:
        try:
            await round_.run(call)
        except Exception:  # a bug below the front: logged, the client's request ends with an error
            logger.exception("a 2026-era call with input rounds failed")
        finally:
            self._parked.pop(round_.token, None)  # a round its client never answered: the call ended without it

    async def _next(self, round_: _Round) -> types.Result:
        try:
            outcome = await round_.next()
        except anyio.get_cancelled_exc_class():
            round_.scope.cancel()  # the client's request went away: so does the call it started
            raise
        if isinstance(outcome, types.InputRequiredResult) and outcome.request_state == round_.token:
            self._parked[round_.token] = round_
        return outcome


def ours(rounds: dict[str, Any] | None) -> bool:
    """Whether a request's rounds answer one of the gateway's input-required results."""
    state = (rounds or {}).get("requestState")
    return isinstance(state, str) and state.startswith(PREFIX)


def wire_rounds(
    params: types.CallToolRequestParams | types.GetPromptRequestParams | types.ReadResourceRequestParams,
) -> dict[str, Any]:
    """A 2026-era client's answers to a downstream's input requests, as wire params to pass on."""
    rounds: dict[str, Any] = {}
    if params.input_responses is not None:
        rounds["inputResponses"] = {
            k: v.model_dump(by_alias=True, mode="json", exclude_none=True) for k, v in params.input_responses.items()
        }
    if params.request_state is not None:
        rounds["requestState"] = params.request_state
    return rounds
