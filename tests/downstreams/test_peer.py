"""What a downstream may be offered during a client's request (`offerable`): the client's own askable capabilities,
also when calls of clients with different capabilities alternate (a session's dump is kept, not reused for another)."""

import mcp.types as types

from gateway.downstreams.peer import Peer, elicitation_modes, offerable


def peer(capabilities: types.ClientCapabilities | None) -> Peer:
    return Peer("k", None, None, capabilities, modern=False)


def test_alternating_clients_are_each_offered_their_own_capabilities() -> None:
    sampling = types.ClientCapabilities(sampling=types.SamplingCapability())
    roots = types.ClientCapabilities(roots=types.RootsCapability(list_changed=True), experimental={"x": {}})
    for _ in range(2):
        assert offerable(peer(sampling)) == {"sampling": {}}
        assert offerable(peer(roots)) == {"roots": {"listChanged": True}}
        assert offerable(peer(None)) == {}
        assert offerable(None) == {}


def test_a_caller_changing_what_it_was_offered_does_not_change_the_next_offer() -> None:
    caps = types.ClientCapabilities(elicitation=types.ElicitationCapability())
    offered = offerable(peer(caps))
    offered["sampling"] = {}
    assert set(offerable(peer(caps))) == {"elicitation"}


def test_the_elicitation_modes_a_client_declared_an_empty_object_meaning_form() -> None:
    def modes(**declared: object) -> frozenset[str]:
        return elicitation_modes(types.ClientCapabilities(elicitation=types.ElicitationCapability(**declared)))

    assert modes() == {"form"}  # the 2025-06-18 shape
    assert modes(form=types.FormElicitationCapability()) == {"form"}
    assert modes(url=types.UrlElicitationCapability()) == {"url"}
    assert modes(form=types.FormElicitationCapability(), url=types.UrlElicitationCapability()) == {"form", "url"}
    assert elicitation_modes(types.ClientCapabilities()) == frozenset()
    assert elicitation_modes(None) == frozenset()
