"""A call that needs its caller to sign in to an OAuth server (DESIGN §16), asked as a URL-mode elicitation.

A client that declared `elicitation.url` (2025-11-25+) is sent `elicitation/create` in mode "url" with the sign-in
link: it shows the person the link and opens it in their browser once they agree. The call then waits for that
sign-in to finish here (`SignInNeeded.signed_in`), tells the client the elicitation is complete, and goes on: the
same call works, with no reconnect and nothing for the model to relay. Any other client, a declined or unanswered
ask, or a sign-in not finished within `WAIT_S` leaves the call's answer the text that says where to sign in.
"""

import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import TypeVar

import mcp.types as types

from gateway.downstreams.oauth_providers import SignInNeeded
from gateway.downstreams.relay import Relay
from gateway.inflight import Peer, elicitation_modes
from gateway.pipeline import Call

logger = logging.getLogger(__name__)
T = TypeVar("T")

WAIT_S = 300.0
"""How long a call waits for its caller to finish signing in (the client's own request timeout may end it sooner;
the next call then works)."""


async def signing_in(relay: Relay, call: Call, attempt: Callable[[], Awaitable[T]]) -> T:
    """`attempt()`; if it needs the caller to sign in and they do when asked (`signed_in`), `attempt()` again."""
    try:
        return await attempt()
    except SignInNeeded as needed:
        if not await signed_in(relay, call, needed):
            raise
    return await attempt()


def askable(peer: Peer | None) -> bool:
    """Can this call's client be asked a URL-mode elicitation (declared, and on a channel that takes a request)?"""
    if peer is None or "url" not in elicitation_modes(peer.capabilities):
        return False
    return not (peer.modern and peer.ask_client is None)


async def signed_in(relay: Relay, call: Call, needed: SignInNeeded) -> bool:
    """Ask the caller to sign in through a URL-mode elicitation and wait for it; True once they have (the call may
    then go on), False to answer with `needed`'s text."""
    peer = call.peer
    if needed.url is None or needed.signed_in is None or peer is None or not askable(peer):
        return False
    ident = f"gateway-sign-in-{uuid.uuid4().hex}"
    params = types.ElicitRequestURLParams(
        message=f"Sign in to {needed.server} to let this call act as you there.", url=needed.url, elicitation_id=ident
    )
    answer = await relay.asking.ask(needed.server, peer, types.ElicitRequest(params=params), WAIT_S)
    if not isinstance(answer, types.ElicitResult) or answer.action != "accept":
        why = answer.message if isinstance(answer, types.ErrorData) else getattr(answer, "action", answer)
        logger.info("sign-in to %s for %s not asked or declined: %s", needed.server, call.session.identity.name, why)
        return False
    if not await needed.signed_in(WAIT_S):
        return False
    with relay.calling(needed.server, peer):  # the completion goes on this call's own channel
        await relay.elicitation_complete(needed.server, ident)
    return True
