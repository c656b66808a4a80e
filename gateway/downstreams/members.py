"""The processes of a per-user pool (`pool.Pool`): one member per identity and set of secrets, busy while a call
holds it (`Lease`); at most `max_processes`, room made by stopping the least recently used idle member (when all are
busy the call is refused, saying so), and members idle for `idle_s` stopped in the background. A member whose user
subscribed to its resources is in use: it is stopped only to make room. An identity signed out (or revoked) loses
its members at once. Each member runs its `Downstream` until stopped and then leaves the pool."""

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio
import anyio.abc

from gateway.downstreams.downstream import Downstream
from gateway.errors import DownstreamError, GatewayError

logger = logging.getLogger(__name__)


class PoolFull(DownstreamError):
    def __init__(self, server: str, limit: int) -> None:
        super().__init__(
            server,
            f"Server {server!r} already runs its {limit} per-user processes (pool.max_processes) and all are "
            f"busy; retry shortly, or ask the administrator to raise servers.{server}.pool.max_processes.",
        )


@dataclass(eq=False)
class Member:
    key: str
    identity: str
    """The key of the identity whose process it is."""
    downstream: Downstream
    last_used: float
    busy: int = 0
    stop: anyio.Event = field(default_factory=anyio.Event)


class Lease:
    """One call's hold on its caller's member (`Pool.lease`): busy, so never stopped for room or idleness, until the
    call ends; a call that failed with a `GatewayError` is then told to `failed`, which may raise what the caller must
    do instead (sign in for more scope). A class, not `asynccontextmanager`: every call to a per-person server takes
    one, and the generator's machinery was a measurable part of its cost (bench/oauth_latency.py)."""

    __slots__ = ("_failed", "_member", "_take", "_timer")

    def __init__(
        self,
        take: Callable[[], Awaitable[Member]],
        failed: Callable[[], Awaitable[None]] | None,
        timer: Callable[[], float],
    ) -> None:
        self._take, self._failed, self._timer = take, failed, timer

    async def __aenter__(self) -> Downstream:
        self._member = member = await self._take()
        member.busy += 1
        return member.downstream

    async def __aexit__(self, kind: object, exc: BaseException | None, traceback: object) -> None:
        try:
            if isinstance(exc, GatewayError) and self._failed is not None:
                await self._failed()
        finally:
            self._member.busy -= 1
            self._member.last_used = self._timer()


def make_room(server: str, members: dict[str, Member], max_processes: int) -> None:
    """Before a new member joins: stop the least recently used idle one when `max_processes` run.

    Raises:
        PoolFull: all of them are busy.
    """
    if len(members) < max_processes:
        return
    idle = [m for m in members.values() if m.busy == 0 and not m.stop.is_set()]
    if not idle:
        raise PoolFull(server, max_processes)
    oldest = min(idle, key=lambda m: m.last_used)
    del members[oldest.key]  # at once: the new member takes its place
    oldest.stop.set()


async def evict_idle(server: str, members: dict[str, Member], idle_s: float, timer: Callable[[], float]) -> None:
    """Stop, for as long as the pool runs, every member nobody used for `idle_s` (looked at every quarter of it)."""
    while True:
        await anyio.sleep(min(idle_s / 4, 30.0))
        now = timer()
        for member in list(members.values()):
            # A process whose user subscribed to its resources is in use (made room for only under pressure).
            if member.busy == 0 and now - member.last_used >= idle_s and not member.downstream.watching:
                logger.info("server %s: %s idle for %.0f s", server, member.downstream.name, idle_s)
                member.stop.set()


def stop_all_of(members: dict[str, Member], identity: str) -> None:
    """Stop every member of the identity with key `identity`, at once (its grant is gone, so its members could only
    fail to re-authorize)."""
    for member in [m for m in members.values() if m.identity == identity]:
        del members[member.key]  # at once: a sign-in after this starts a fresh one
        member.stop.set()


async def run(
    server: str, members: dict[str, Member], member: Member, *, task_status: anyio.abc.TaskStatus[None]
) -> None:
    """Run `member`'s downstream (started once it is up) until it is stopped; then it leaves `members`."""
    try:
        async with member.downstream.running():
            task_status.started()
            await member.stop.wait()
    finally:
        if members.get(member.key) is member:
            del members[member.key]
        logger.info("server %s: stopped %s", server, member.downstream.name)
