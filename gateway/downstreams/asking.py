"""Putting a downstream's request to one client (DESIGN §15): `sampling/createMessage`, `elicitation/create` or
`roots/list`, checked against what the client declared (the capability, the elicitation mode) and the URL rule, then
sent on the right channel: a 2026-era client's input-required round, the call's own stream, or the connection's
standalone stream for a lane's call. What cannot be asked gives the server an error that says why and the client a
notice on its call's result; an answer that errs or is invalid does the same. Which client to ask is the relay's.
"""

import uuid
from collections.abc import Mapping
from typing import Any

import mcp.types as types
from mcp import MCPError
from mcp.shared.message import ServerMessageMetadata
from pydantic import ValidationError

from gateway.downstreams.url_asks import UrlAsks, url_refusal
from gateway.inflight import Peer, elicitation_modes

_RESULTS: dict[str, tuple[Any, str]] = {
    "sampling/createMessage": (types.CreateMessageResult, "sampling"),
    "elicitation/create": (types.ElicitResult, "elicitation"),
    "roots/list": (types.ListRootsResult, "roots"),
}


class Asking:
    """Asks clients for their downstreams; remembers whom each URL-mode elicitation asked (`url_asks`)."""

    def __init__(self, url_asks: UrlAsks) -> None:
        self.url_asks = url_asks

    async def ask(self, server: str, peer: Peer, request: Any, timeout_s: float) -> Any:
        """Ask the client of `peer`; its answer, or `ErrorData` that says why not (the client gets a notice)."""
        result_type, capability = _RESULTS[request.method]
        no_rounds = peer.modern and peer.ask_client is None
        if no_rounds or getattr(peer.capabilities, capability, None) is None:
            why = "speaks the 2026-07-28 era, and its call cannot take input rounds" if no_rounds else None
            why = why or f"did not declare the {capability} capability"
            peer.notices.append(f"server {server!r} asked for {request.method}, but this client {why}.")
            return refusal(f"the calling client {why}, so the gateway cannot relay {request.method}")
        mode = _elicitation_mode(request)
        if mode is not None and mode not in elicitation_modes(peer.capabilities):
            why = f"declared elicitation without {mode} mode"
            peer.notices.append(f"server {server!r} asked for a {mode}-mode elicitation, but this client {why}.")
            return refusal(f"the calling client {why}, so the gateway cannot relay this elicitation")
        unsafe = url_refusal(request)
        if unsafe is not None:
            peer.notices.append(f"server {server!r} asked this client to open a URL; the gateway refused: {unsafe}.")
            return refusal(f"the gateway does not relay this URL-mode elicitation: {unsafe}", types.INVALID_PARAMS)
        request = self._url_elicitation(server, peer, request)
        try:
            if peer.ask_client is not None:  # a 2026-era client: asked in an input-required result of its call
                answer = result_type.model_validate(await peer.ask_client(request, timeout_s))
            elif peer.request_id is None:  # a lane's call: ask on the connection's standalone stream
                answer = await peer.session.send_request(request, opts={"timeout": timeout_s})
            else:
                answer = await peer.session.send_request(
                    request,
                    result_type,
                    request_read_timeout_seconds=timeout_s,
                    metadata=ServerMessageMetadata(related_request_id=peer.request_id),
                )
            return answer if mode != "url" else _action_only(answer)
        except MCPError as exc:
            peer.notices.append(f"server {server!r} asked for {request.method}; the client answered: {exc.message}")
            return exc.error
        except ValidationError as exc:
            peer.notices.append(f"server {server!r} asked for {request.method}; the client's answer was invalid.")
            return refusal(
                f"the client answered {request.method} with an invalid result ({exc.error_count()} problems)",
                types.INVALID_PARAMS,
            )

    def _url_elicitation(self, server: str, peer: Peer, request: Any) -> Any:
        """Remember whom a URL-mode elicitation asked; give it the id a 2025-11-25 client requires (a 2026-era
        server names none)."""
        params = request.params
        if not isinstance(params, types.ElicitRequestURLParams):
            return request
        ident = params.elicitation_id
        if ident is None:
            ident = f"gateway-{uuid.uuid4().hex}"
            request = request.model_copy(update={"params": params.model_copy(update={"elicitation_id": ident})})
        self.url_asks.remember(server, ident, peer.key)
        return request

    async def answer(
        self, server: str, peer: Peer, requests: Mapping[str, Any], timeout_s: float
    ) -> dict[str, Any] | str:
        """Answers to a 2026-era downstream's input requests from a handshake-era client; else why not."""
        answers: dict[str, Any] = {}
        for key, request in requests.items():
            answer = await self.ask(server, peer, request, timeout_s)
            if isinstance(answer, types.ErrorData):
                return f"it needed {request.method}, which could not be relayed: {answer.message}"
            answers[key] = answer
        return answers


def _action_only(answer: Any) -> Any:
    """A URL-mode elicitation's answer as passed on: its action, nothing else. What the user gives there goes to
    the URL's page, never through the client or the gateway (2026-07-28 client/elicitation); a client that sends
    content anyway (what it scraped, or its own credentials) does not have it forwarded."""
    if isinstance(answer, types.ElicitResult):
        return types.ElicitResult(action=answer.action)
    return {"action": answer.get("action")} if isinstance(answer, dict) else answer


def _elicitation_mode(request: Any) -> str | None:
    if not isinstance(request, types.ElicitRequest):
        return None
    return "url" if isinstance(request.params, types.ElicitRequestURLParams) else "form"


def refusal(message: str, code: int = types.INVALID_REQUEST) -> types.ErrorData:
    return types.ErrorData(code=code, message=message)
