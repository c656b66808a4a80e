"""A request in flight: what a downstream may be offered during a client's request (`offerable`), its client's own
askable capabilities also when calls of clients with different capabilities alternate; and the count of calls in
flight that a retirement waits out (`InFlight`)."""

import anyio
import mcp.types as types
import pytest

from gateway.inflight import InFlight, Peer, elicitation_modes, offerable


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


@pytest.mark.anyio
async def test_idle_returns_at_once_with_no_call_in_flight_and_after_the_last_one_ends() -> None:
    calls = InFlight()
    await calls.idle()
    ended = []

    async def retire() -> None:
        await calls.idle()
        ended.append(calls.count)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            with calls.counted():
                with calls.counted():
                    tg.start_soon(retire)
                    await anyio.wait_all_tasks_blocked()
                await anyio.wait_all_tasks_blocked()
                assert ended == []  # one call is still in flight
    assert ended == [0]


@pytest.mark.anyio
async def test_a_call_that_starts_after_a_wait_began_is_waited_for_too() -> None:
    calls = InFlight()
    ended = anyio.Event()

    async def retire() -> None:
        await calls.idle()
        ended.set()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            with calls.counted():
                tg.start_soon(retire)
                await anyio.wait_all_tasks_blocked()
            # idle was signalled: a call that enters before the waiter runs again keeps it waiting
            with calls.counted():
                await anyio.wait_all_tasks_blocked()
                assert not ended.is_set()
            await ended.wait()
