"""Per-identity downstreams for a server whose settings use `${user:NAME}` or that signs each person in (`auth:
oauth`, `downstreams.oauth`): one process (or HTTP connection) per identity and set of secrets, so every user acts
upstream as themselves. `admit` refuses an identity before a member is made (one who has not signed in yet).

Each member is an ordinary `Downstream` (same supervision, restart, timeouts, process-group cleanup), run
in a task of the pool's own. The pool caps members at `max_processes` (`members`: making room by stopping the least
recently used idle one; when all are busy the call is refused with a clear error) and stops members idle
for `idle_s`. A user whose secrets change (a new header value) gets a new member; the old one idles out.
Tools are listed from the oldest member that is up (one server's software lists the same tools for all), only its
tool-list changes passed on; resources, templates and prompts may be a user's own, so each identity lists its own
member's (`routing/personal.py`) and hears of their changes alone. The gateway's own calls (version sources) are
not served by anyone's credentials. Completion and resource subscriptions go to the caller's own member; its
resource updates are that identity's alone, and a member holding subscriptions is not stopped for idleness.
"""

import hashlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, Protocol, Self

import anyio
import anyio.abc

from gateway.downstreams.downstream import Downstream
from gateway.downstreams.members import Lease, Member, evict_idle, make_room, run, stop_all_of
from gateway.downstreams.secrets import Secrets, ServerSettings, expand, references
from gateway.downstreams.state import State
from gateway.downstreams.supervision import Target
from gateway.errors import DownstreamUnavailable, GatewayError
from gateway.session import Identity


class ListChangedFor(Protocol):
    """`ListChanged`, with the key of the identity whose own listing changed (None: everyone's, e.g. tools)."""

    def __call__(self, server: str, kind: str, audience: str | None = None) -> None: ...


class Pool:
    def __init__(
        self,
        name: str,
        settings: ServerSettings,
        secrets: Secrets,
        make_target: Callable[[ServerSettings, Identity], Target],
        *,
        on_list_changed: ListChangedFor | None = None,
        timer: Callable[[], float] = time.monotonic,
        callbacks_for: Callable[[str, str], Mapping[str, Any]] | None = None,
        on_elicitation_complete: Callable[[str, str], Awaitable[None]] | None = None,
        on_resource_updated: Callable[[str, str, str], Awaitable[None]] | None = None,
        prepare: Callable[[], Awaitable[None]] | None = None,
        admit: Callable[[Identity], Awaitable[None]] | None = None,
        failed: Callable[[Identity], Awaitable[None]] | None = None,
        lister: Callable[[], Awaitable[Identity | None]] | None = None,
    ) -> None:
        self.name = name
        self._admit = admit
        """Raises for an identity that may not have a member yet (`SignInNeeded`); None: everyone may."""
        self._failed = failed
        """After a leased call failed: raises what the identity must do instead (`SignInNeeded` for a wider scope)."""
        self._lister_of = lister
        """Someone whose process (connection) may list the tools for everyone when the caller's cannot start (a server
        the caller has not signed in to: the last person who did)."""
        self._prepare = prepare
        """Each member's, before its process starts (`Downstream`'s `prepare`)."""
        self._on_elicitation_complete = on_elicitation_complete
        # Called with (server, uri, identity key): an update from a user's process is that user's alone.
        self._on_resource_updated = on_resource_updated
        # The relay's callbacks for one member (its downstream name, its identity's key): what its process asks and
        # logs reaches that identity's caller alone.
        self._callbacks_for = callbacks_for or (lambda member, audience: {})
        self.settings = settings
        self.needs = references(settings)
        self.secrets = secrets
        self.max_processes = settings.pool.max_processes
        self.idle_s = settings.pool.idle_s
        self.last_error: str | None = None
        self.task_only: frozenset[str] = frozenset()  # tools run only as tasks, by the lister's last tool listing
        self.started = 0
        self._make_target = make_target
        self._on_list_changed: ListChangedFor = on_list_changed or (lambda server, kind, audience=None: None)
        self._timer = timer
        self._members: dict[str, Member] = {}
        self._lock = anyio.Lock()
        self._tg: anyio.abc.TaskGroup | None = None

    # -- lifetime --------------------------------------------------------------------------------

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Self]:
        """The members and the idle eviction run in a task group of the pool's own for the block; leaving stops
        every member's process."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            tg.start_soon(
                evict_idle, self.name, self._members, self.idle_s, self._timer, name=f"pool {self.name}: idle"
            )
            try:
                yield self
            finally:
                self._tg = None
                tg.cancel_scope.cancel()

    async def settled(self) -> None:
        """Nothing to wait for: members start on their user's first call."""

    @property
    def state(self) -> State:
        """Up while some user's process is (its listings are the pool's), else idle."""
        return State.UP if self._lister() is not None else State.IDLE

    @property
    def restarts(self) -> int:
        return sum(m.downstream.restarts for m in self._members.values())

    @property
    def protocol_version(self) -> str | None:
        lister = self._lister()
        return None if lister is None else lister.downstream.protocol_version

    @property
    def problems(self) -> dict[str, list[str]]:
        """What the listing member's tool listing had wrong (`Downstream.problems`); its others are its user's own."""
        lister = self._lister()
        return {} if lister is None else {"tools": lister.downstream.problems.get("tools", [])}

    @property
    def processes(self) -> int:
        return len(self._members)

    # -- members ---------------------------------------------------------------------------------

    def lease(self, identity: Identity, request_secrets: Mapping[str, str]) -> Lease:
        """The caller's own downstream, held busy (not evicted) while the call runs.

        Raises:
            MissingSecret: a secret the server needs is not available for this identity.
            PoolFull: `max_processes` members exist and all are busy.
            SignInNeeded: the server signs each person in, and this identity has not.
        """
        failed = None if self._failed is None else partial(self._failed, identity)
        return Lease(partial(self._take, identity, request_secrets), failed, self._timer)

    async def _take(self, identity: Identity, request_secrets: Mapping[str, str]) -> Member:
        if self._admit is not None:
            try:
                await self._admit(identity)
            except GatewayError:  # signed out or revoked: its connection (failing to re-authorize) goes too
                stop_all_of(self._members, identity.key)
                raise
        if not self.needs:  # one member per identity (a server that signs each person in): nothing to tell apart
            return await self._member(identity.key, identity, {})
        values = self.secrets.resolve(self.name, identity, self.needs, request_secrets)  # in the order of the names
        # The repr of the pairs, not JSON: as unambiguous, and JSON's encoder cost ~3 of this path's ~4.5 µs per call.
        digest = hashlib.sha256(repr(tuple(values.items())).encode()).hexdigest()[:16]
        return await self._member(f"{identity.key}#{digest}", identity, values)

    async def _member(self, key: str, identity: Identity, values: dict[str, str]) -> Member:
        member = self._members.get(key)
        if member is not None and member.downstream.state is State.UP:  # the lock's trip through the event loop
            return member  # was a measurable part of every call; only a start needs it (bench/oauth_latency.py)
        async with self._lock:  # two first calls of one user start one process
            member = self._members.get(key)
            if member is None:
                make_room(self.name, self._members, self.max_processes)
                settings = expand(self.settings, values)
                # The name routes what the process asks and logs (the relay's calls in flight are by server name):
                # two identities may share a display name, so the owner digest tells them apart.
                who = f"{self.name}@{identity.name}~{identity.owner[:8]}"
                updated = self._on_resource_updated
                downstream = Downstream(
                    who,
                    lambda: self._make_target(settings, identity),
                    callbacks=self._callbacks_for(who, identity.key),
                    protocol=self.settings.protocol,
                    timeout_s=self.settings.timeout_s,
                    max_timeout_s=self.settings.max_timeout_s,
                    connect_timeout_s=self.settings.connect_timeout_s,
                    on_list_changed=lambda _server, kind: self._changed(key, identity.key, kind),
                    on_elicitation_complete=self._on_elicitation_complete,
                    on_resource_updated=None if updated is None else partial(self._updated, identity.key),
                    prepare=self._prepare,
                )
                downstream.task_only = self.task_only  # its own listing is never asked for (`list_all`)
                member = self._members[key] = Member(key, identity.key, downstream, self._timer())
                assert self._tg is not None, "the pool is not running"
                await self._tg.start(run, self.name, self._members, member)
                self.started += 1
            member.last_used = self._timer()
            return member

    def stop(self, identity: Identity) -> None:
        """Stop `identity`'s processes (or connections) now: they signed out, so theirs could only fail."""
        stop_all_of(self._members, identity.key)

    def release(self, identity: str, uri: str) -> None:
        """That identity's sessions no longer watch `uri`: its running processes leave it (none is started for it)."""
        for member in list(self._members.values()):
            if member.identity == identity:
                member.downstream.release(uri)

    async def _updated(self, audience: str, member: str, uri: str) -> None:
        assert self._on_resource_updated is not None
        await self._on_resource_updated(self.name, uri, audience)

    # -- listings --------------------------------------------------------------------------------

    def _lister(self) -> Member | None:
        return next((m for m in self._members.values() if m.downstream.state is State.UP), None)

    def _changed(self, key: str, identity: str, kind: str) -> None:
        if kind != "tools":  # that identity's own listing
            self._on_list_changed(self.name, kind, identity)
            return
        lister = self._lister()
        if lister is not None and lister.key == key:
            self._on_list_changed(self.name, kind)

    async def wake(self, identity: Identity, request_secrets: Mapping[str, str]) -> None:
        """Start the caller's process so the pool can list (a listing request found it idle)."""
        async with self.lease(identity, request_secrets) as downstream:
            await downstream.settled()

    async def wake_for_listing(self) -> bool:
        """Start the process of someone who can list the tools (`lister`), for a caller whose own cannot start;
        True if one started. Their process only lists: every call still goes out on its caller's own."""
        identity = None if self._lister_of is None else await self._lister_of()
        if identity is None:
            return False
        await self.wake(identity, {})
        return True

    async def list_all(self, kind: str) -> list[Any]:
        lister = self._lister()
        if lister is None:
            raise DownstreamUnavailable(self.name, "idle", "no user's process is running yet to list its tools")
        items = await lister.downstream.list_all(kind)
        if kind == "tools":  # every user's process calls what runs only as a task as one (known from this listing)
            self.task_only = lister.downstream.task_only
            for member in self._members.values():
                member.downstream.task_only = self.task_only
        return items
