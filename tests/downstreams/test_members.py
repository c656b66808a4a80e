"""Which of a per-user pool's processes stop (`members`): the least recently used idle one makes room under the cap,
none when all are busy (the caller is told to retry, naming the setting), and those idle past `idle_s` stop alone
unless their user watches their resources; an identity signed out loses all its members at once, and a member runs
until stopped, then leaves the pool. A call's lease holds its member busy and tells `failed` of a gateway error
alone. Only `run` starts a member's server (the SDK's, in process)."""

import anyio
import pytest
from mcp.server import Server

from gateway.downstreams.downstream import Downstream
from gateway.downstreams.members import Lease, Member, PoolFull, evict_idle, make_room, run, stop_all_of
from gateway.downstreams.state import State
from gateway.errors import DownstreamFailed, GatewayError

pytestmark = pytest.mark.anyio


def member(key: str, last_used: float, busy: int = 0) -> Member:
    return Member(key, key, Downstream(f"h@{key}", lambda: Server("h")), last_used, busy)


def pool(*members: Member) -> dict[str, Member]:
    return {m.key: m for m in members}


def test_under_the_cap_nobody_is_stopped() -> None:
    members = pool(member("a", 1.0), member("b", 2.0))
    make_room("h", members, 3)
    assert sorted(members) == ["a", "b"]
    assert not any(m.stop.is_set() for m in members.values())


def test_at_the_cap_the_least_recently_used_idle_member_makes_room_at_once() -> None:
    oldest_busy, old, new = member("a", 1.0, busy=1), member("b", 2.0), member("c", 3.0)
    members = pool(oldest_busy, old, new)
    make_room("h", members, 3)
    assert sorted(members) == ["a", "c"]  # gone from the pool at once: the new member takes its place
    assert old.stop.is_set() and not new.stop.is_set() and not oldest_busy.stop.is_set()


def test_when_every_member_is_busy_the_caller_is_told_to_retry_and_which_setting_to_raise() -> None:
    members = pool(member("a", 1.0, busy=1), member("b", 2.0, busy=2))
    with pytest.raises(PoolFull) as full:
        make_room("h", members, 2)
    assert str(full.value) == (
        "Server 'h' already runs its 2 per-user processes (pool.max_processes) and all are busy; retry shortly, "
        "or ask the administrator to raise servers.h.pool.max_processes."
    )
    assert sorted(members) == ["a", "b"]


async def test_members_idle_past_idle_s_stop_and_busy_or_watched_or_recent_ones_run_on() -> None:
    now = 100.0
    idle, busy, recent, watched = member("a", 0.0), member("b", 0.0, busy=1), member("c", 99.0), member("d", 0.0)
    watched.downstream._subscriptions.remember("note://x", True)  # its user subscribed to one of its resources
    members = pool(idle, busy, recent, watched)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(evict_idle, "h", members, 4.0, lambda: now)
            await idle.stop.wait()  # looked at every second (a quarter of idle_s)
            tg.cancel_scope.cancel()
    assert [m.key for m in members.values() if m.stop.is_set()] == ["a"]


def test_an_identity_signed_out_loses_all_its_members_at_once_and_others_keep_theirs() -> None:
    first, second, others = member("ann#1", 1.0, busy=1), member("ann#2", 2.0), member("bob#1", 3.0)
    first.identity = second.identity = "ann"
    members = pool(first, second, others)
    stop_all_of(members, "ann")
    assert sorted(members) == ["bob#1"]  # gone at once, busy or not: a sign-in after this starts a fresh one
    assert first.stop.is_set() and second.stop.is_set() and not others.stop.is_set()


async def test_a_member_runs_until_stopped_then_leaves_the_pool_unless_another_took_its_place() -> None:
    gone, replaced, successor = member("a", 1.0), member("b", 1.0), member("b", 2.0)
    members = pool(gone, replaced)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await tg.start(run, "h", members, gone)
            await tg.start(run, "h", members, replaced)
            await gone.downstream.settled()
            await replaced.downstream.settled()
            assert gone.downstream.state is State.UP and replaced.downstream.state is State.UP
            members["b"] = successor  # made room for, and the same user's new member joined under its key
            gone.stop.set()
            replaced.stop.set()
    assert members == {"b": successor}
    assert gone.downstream.state is not State.UP


async def test_a_lease_holds_its_member_busy_for_the_call_and_tells_failed_of_a_gateway_error_alone() -> None:
    held, told = member("a", 1.0), []

    async def take() -> Member:
        return held

    async def failed() -> None:
        told.append(held.busy)  # still busy: the member is not stopped while its caller is told what to do
        raise GatewayError("sign in for more scope")

    async with Lease(take, failed, lambda: 5.0) as downstream:
        assert downstream is held.downstream and held.busy == 1
    assert (held.busy, held.last_used, told) == (0, 5.0, [])
    with pytest.raises(ZeroDivisionError):  # not a gateway error: not the caller's to act on
        async with Lease(take, failed, lambda: 6.0):
            raise ZeroDivisionError
    with pytest.raises(GatewayError, match="sign in for more scope"):  # what `failed` says replaces the failure
        async with Lease(take, failed, lambda: 7.0):
            raise DownstreamFailed("h", "403")
    assert (held.busy, held.last_used, told) == (0, 7.0, [1])
