"""Putting a downstream's request to one client (`Asking`): what is refused before anything is sent (the capability,
the elicitation mode, the URL rule, a 2026-era call that cannot take rounds), each with the server told why and the
client a notice; and a 2026-era client asked through its call's round (its `ask_client`, the edge the front hands
over), its answer checked. Sending on a handshake-era client's stream is tests/downstreams/relay/'s (real clients)."""

from typing import Any

import anyio
import mcp.types as types
import pytest

from gateway.downstreams.asking import Asking
from gateway.downstreams.url_asks import UrlAsks
from gateway.inflight import Peer

pytestmark = pytest.mark.anyio

SAMPLING = types.CreateMessageRequest(
    params=types.CreateMessageRequestParams(
        messages=[types.SamplingMessage(role="user", content=types.TextContent(text="hi"))], max_tokens=5
    )
)
FORM = types.ElicitRequest(
    params=types.ElicitRequestFormParams(message="Name?", requested_schema={"type": "object", "properties": {}})
)


def url_ask(url: str, ident: str | None = None) -> types.ElicitRequest:
    return types.ElicitRequest(params=types.ElicitRequestURLParams(message="Sign in", url=url, elicitation_id=ident))


class Client:
    """A client end: its `Peer`, and for a 2026-era call its round (`ask_client`) answering from `answers`."""

    def __init__(
        self, capabilities: types.ClientCapabilities, *, modern: bool = False, answers: list[Any] | None = None
    ):
        self.asked: list[Any] = []
        self._answers = answers
        ask = self._ask if answers is not None else None
        self.peer = Peer("k", None, None, capabilities, modern, ask_client=ask)
        self.notices = self.peer.notices

    async def _ask(self, request: Any, timeout_s: float) -> Any:
        self.asked.append(request)
        assert self._answers
        return self._answers.pop(0)


ELICITS = types.ClientCapabilities(elicitation=types.ElicitationCapability())
BOTH_MODES = types.ClientCapabilities(
    elicitation=types.ElicitationCapability(
        form=types.FormElicitationCapability(), url=types.UrlElicitationCapability()
    )
)


async def test_a_client_without_the_capability_is_not_asked_and_both_sides_are_told_why() -> None:
    client = Client(ELICITS)
    refused = await Asking(UrlAsks()).ask("s", client.peer, SAMPLING, 5)
    assert refused == types.ErrorData(
        code=types.INVALID_REQUEST,
        message="the calling client did not declare the sampling capability, so the gateway cannot relay "
        "sampling/createMessage",
    )
    assert client.notices == [
        "server 's' asked for sampling/createMessage, but this client did not declare the sampling capability."
    ]


async def test_a_2026_call_that_cannot_take_input_rounds_is_not_asked() -> None:
    client = Client(ELICITS, modern=True)
    refused = await Asking(UrlAsks()).ask("s", client.peer, FORM, 5)
    assert isinstance(refused, types.ErrorData)
    assert "speaks the 2026-07-28 era, and its call cannot take input rounds" in refused.message
    assert len(client.notices) == 1


async def test_a_form_only_client_is_not_sent_a_url_elicitation() -> None:
    client = Client(ELICITS)  # an empty elicitation object: form only
    refused = await Asking(UrlAsks()).ask("s", client.peer, url_ask("https://example.com/login"), 5)
    assert isinstance(refused, types.ErrorData)
    assert refused.message == (
        "the calling client declared elicitation without url mode, so the gateway cannot relay this elicitation"
    )
    assert client.notices == [
        "server 's' asked for a url-mode elicitation, but this client declared elicitation without url mode."
    ]


async def test_an_unsafe_url_is_refused_to_the_server_with_the_reason_and_never_reaches_the_client() -> None:
    client = Client(BOTH_MODES, modern=True, answers=[])
    refused = await Asking(UrlAsks()).ask("s", client.peer, url_ask("javascript:alert(1)"), 5)
    assert isinstance(refused, types.ErrorData) and refused.code == types.INVALID_PARAMS
    assert refused.message.startswith("the gateway does not relay this URL-mode elicitation: ")
    assert client.asked == []
    assert client.notices[0].startswith("server 's' asked this client to open a URL; the gateway refused: ")


async def test_a_2026_client_is_asked_in_its_round_and_a_url_ask_gets_an_id_whose_completion_finds_it() -> None:
    asks = UrlAsks()
    client = Client(BOTH_MODES, modern=True, answers=[{"action": "accept"}])
    answer = await Asking(asks).ask("s", client.peer, url_ask("https://example.com/login"), 5)
    assert answer == types.ElicitResult(action="accept")
    [sent] = client.asked
    ident = sent.params.elicitation_id
    assert ident.startswith("gateway-")  # a 2026-era server names none; a 2025-11-25 client requires one
    assert asks.asked("s", ident) == "k"
    assert client.notices == []


async def test_an_invalid_answer_gives_the_server_an_error_and_the_client_a_notice() -> None:
    client = Client(BOTH_MODES, modern=True, answers=[{"action": "maybe"}])
    refused = await Asking(UrlAsks()).ask("s", client.peer, FORM, 5)
    assert refused == types.ErrorData(
        code=types.INVALID_PARAMS,
        message="the client answered elicitation/create with an invalid result (1 problems)",
    )
    assert client.notices == ["server 's' asked for elicitation/create; the client's answer was invalid."]


async def test_a_2026_client_that_takes_rounds_but_lacks_the_capability_is_told_so_not_blamed_on_its_era() -> None:
    client = Client(ELICITS, modern=True, answers=[])
    refused = await Asking(UrlAsks()).ask("s", client.peer, SAMPLING, 5)
    assert isinstance(refused, types.ErrorData)
    assert refused.message == (
        "the calling client did not declare the sampling capability, so the gateway cannot relay sampling/createMessage"
    )
    assert client.asked == []


async def test_a_servers_rounds_are_answered_in_full_or_not_at_all_saying_which_request_failed() -> None:
    both = types.ClientCapabilities(elicitation=types.ElicitationCapability())
    client = Client(both, modern=True, answers=[{"action": "decline"}, {"action": "decline"}])
    asking = Asking(UrlAsks())
    with anyio.fail_after(5):
        answered = await asking.answer("s", client.peer, {"a": FORM}, 5)
        failed = await asking.answer("s", client.peer, {"a": FORM, "b": SAMPLING}, 5)
    assert answered == {"a": types.ElicitResult(action="decline")}
    assert isinstance(failed, str)
    assert failed.startswith("it needed sampling/createMessage, which could not be relayed: the calling client did")
