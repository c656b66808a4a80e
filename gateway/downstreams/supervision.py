"""One downstream server's connection, kept up: the owner task connects (a subprocess, a URL, or an in-process
server), watches it, and reconnects with exponential backoff whenever it is lost; calls wait for a connection that
is (re)starting instead of failing. What is sent over it is `downstream.Downstream`'s."""

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Self, TypeVar

import anyio
import mcp.types as types
from mcp import Client
from mcp.client import advertise
from mcp.server import Server
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, TypeAdapter

from adapters.lane import Lane
from adapters.link import Connector, opened
from adapters.streams import watched
from gateway import __version__, sdk
from gateway.downstreams import changes, tasks
from gateway.downstreams.callers import ToolCaller, caller_for
from gateway.downstreams.state import State
from gateway.downstreams.subscriptions import Subscriptions
from gateway.errors import describe
from gateway.inflight import InFlight
from gateway.sdk import ProgressFn

logger = logging.getLogger(__name__)
# MCP Apps, declared to every server: relayed whole (routing.apps); a server SHOULD list UI tools only to their takers.
MCP_APPS = advertise("io.modelcontextprotocol/ui", {"mimeTypes": ["text/html;profile=mcp-app"]})

Target = Connector | Server[Any]
ListChanged = Callable[[str, str], None]  # called with (server, kind): kind is "tools", "resources" or "prompts"
R = TypeVar("R", bound=BaseModel)
MODES: dict[str, str] = {"auto": "auto", "legacy": "legacy", "modern": "2026-07-28"}


class Supervised(ABC):
    """A downstream server behind one long-lived `mcp.Client`, shared by all client sessions.

    Run as `async with server.running()`: the owner task connects, and reconnects with exponential backoff
    whenever the connection is lost; leaving closes the connection and, for stdio servers, the process group.
    """

    def __init__(
        self,
        name: str,
        target: Callable[[], Target],
        *,
        protocol: str = "auto",
        timeout_s: float = 60.0,
        max_timeout_s: float | None = None,
        connect_timeout_s: float = 30.0,
        on_list_changed: ListChanged | None = None,
        backoff: tuple[float, float] = (0.1, 30.0),
        callbacks: Mapping[str, Any] | None = None,
        on_resource_updated: Callable[[str, str], Awaitable[None]] | None = None,
        on_elicitation_complete: Callable[[str, str], Awaitable[None]] | None = None,
        prepare: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.name = name
        self.timeout_s = timeout_s
        self.max_timeout_s = max_timeout_s
        self.state = State.STARTING
        self.last_error: str | None = None
        self.restarts = 0
        self.failing_since: float | None = None
        """When (wall clock) the server last stopped being up, or first failed to come up; None while it is up."""
        self.next_try: float | None = None
        """When (wall clock) the next connection attempt starts, during a backoff; None otherwise."""
        self.protocol_version: str | None = None
        self.problems: dict[str, list[str]] = {}
        """Per listing kind, the entries the server's last listing had wrong (repaired or left out)."""
        self.task_only: frozenset[str] = frozenset()  # tools its last listing runs only as tasks: `TaskCaller`
        self.hosted = False
        """An in-process server (Think, `gateway.*`): the forward tells it whose call it is (`OWNER_META_KEY`)."""
        self._target, self._prepare = target, prepare
        self._mode = MODES[protocol]
        self._connect_timeout_s = connect_timeout_s
        self._on_list_changed = on_list_changed or (lambda server, kind: None)
        self._backoff = backoff
        # The relay's sampling, elicitation, roots and logging callbacks (DESIGN §15).
        self._callbacks = dict(callbacks or {})
        self._on_resource_updated = on_resource_updated
        self._on_elicitation_complete = on_elicitation_complete
        self._subscriptions = Subscriptions(name, on_resource_updated)
        self._client: Client | None = None
        self._caller: ToolCaller | None = None
        self._lane: Lane | None = None
        self._lost = anyio.Event()
        # Set, then replaced, whenever a connection attempt ends (up or failed): calls wait on it.
        self._attempt = anyio.Event()
        self._settled = anyio.Event()
        # Nothing here may need a running event loop: the HTTP front builds the gateway before uvicorn starts one.
        self._tg: anyio.abc.TaskGroup | None = None
        self._stopping = False
        self._calls = InFlight()
        """Calls in flight, so `close` can let them finish."""
        self._closed = anyio.Event()
        self._owner: anyio.CancelScope | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Self]:
        """The owner task runs in a task group of this server's own for the block (it connects, and reconnects
        whenever the connection is lost); leaving closes the connection and a stdio server's process group."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            tg.start_soon(self._run, name=f"downstream {self.name}")
            try:
                yield self
            finally:
                self._tg, self._stopping = None, True
                tg.cancel_scope.cancel()

    async def settled(self) -> None:
        """Wait until the first connection attempt has succeeded or failed."""
        await self._settled.wait()

    async def close(self, *, drain_s: float) -> None:
        """Stop this server now (a reload dropped or replaced it): calls in flight get up to `drain_s` to finish,
        then the connection (and a stdio server's process group) is closed. `async with`'s exit still runs later."""
        with anyio.move_on_after(drain_s):
            await self._calls.idle()
        self._stopping = True
        # The owner task's own scope: the task group's would also cancel whatever task entered it.
        if self._owner is not None:
            self._owner.cancel()
        if self._tg is not None:
            await self._closed.wait()

    # -- the owner task ------------------------------------------------------------------------

    def _attempt_ended(self) -> None:
        self._settled.set()
        self._attempt.set()
        self._attempt = anyio.Event()

    async def _run(self) -> None:
        try:
            with anyio.CancelScope() as self._owner:
                await self._supervise()
        finally:
            self._closed.set()

    async def _supervise(self) -> None:
        delay = self._backoff[0]
        while not self._stopping:
            self._lost = anyio.Event()
            was_up = False
            try:
                if self._prepare is not None:  # a `package:` server's environment: installs outlast connect_timeout_s
                    await self._prepare()
                async with anyio.create_task_group() as tg:
                    with anyio.fail_after(self._connect_timeout_s):
                        await tg.start(self._hold)
                    was_up, delay = True, self._backoff[0]
                    self.failing_since = None
                    await self._lost.wait()
                    tg.cancel_scope.cancel()
                if self._stopping:
                    break
                self.last_error = "the connection was lost"
            except Exception as exc:  # noqa: BLE001 -- any failure to connect is retried, never fatal
                # `fail_after` cancels `tg.start` inside the task group, which hands its TimeoutError on in a group.
                timed_out = isinstance(exc, ExceptionGroup) and exc.split(TimeoutError)[1] is None
                late = f"no handshake within {self._connect_timeout_s:g} s (connect_timeout_s)"
                self.last_error = late if timed_out else describe(exc)
            # A server that was up stays "restarting" through the backoff, so calls wait for the
            # new connection instead of failing (the next call after a crash must succeed).
            self.state = State.RESTARTING if was_up else State.DOWN
            if self.failing_since is None:
                self.failing_since = time.time()
            if not was_up:
                self._attempt_ended()
            logger.warning("server %s is %s: %s; retrying in %.1f s", self.name, self.state, self.last_error, delay)
            self.next_try = time.time() + delay
            await anyio.sleep(delay)
            self.next_try = None
            delay = min(delay * 2, self._backoff[1])
            self.restarts += 1
            self.state = State.RESTARTING

    async def _hold(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        target = self._target()
        if isinstance(target, Server):
            self.hosted = True
            await self._serve(Client(target, **self._client_options()), None, task_status)
            return
        async with watched(target, self._lost) as link:
            await self._serve(Client(opened(link.streams), **self._client_options()), link.lane, task_status)

    def _client_options(self) -> dict[str, Any]:
        return {
            "mode": self._mode,
            "cache": None,
            "message_handler": self._on_message,
            "client_info": types.Implementation(name="mcp-gateway", version=__version__),
            "extensions": [MCP_APPS],
            **self._callbacks,
        }

    async def _serve(self, client: Client, lane: Lane | None, task_status: anyio.abc.TaskStatus[None]) -> None:
        try:
            async with client:
                self._client = client
                sdk.offer_per_request(client.session)  # a 2026-era call declares what its client can answer
                modern = client.protocol_version in MODERN_PROTOCOL_VERSIONS
                caller = caller_for(client.session, lane, modern=modern)
                # A 2026-era connection's calls: one the server makes a task is followed to its end (`tasks`).
                self._caller = tasks.ModernTasks(caller, client.session) if modern else caller
                self._lane = lane
                self.protocol_version = client.protocol_version
                self.state = State.UP
                self.last_error = None
                # Before calls waiting for this connection go on: an update they cause reaches the subscribers.
                # Bounded well inside the connect timeout (a slow subscription must not fail the connection).
                with anyio.move_on_after(min(self.timeout_s, self._connect_timeout_s / 2)):
                    await self._subscriptions.renew(client, self.request, self._tg)
                self._attempt_ended()
                logger.info("server %s is up (%s)", self.name, client.protocol_version)
                task_status.started()
                for kind in ("tools", "resources", "prompts"):  # what it offers may differ from before
                    self._on_list_changed(self.name, kind)
                if client.protocol_version == "2026-07-28":
                    await changes.listen(client, self.name, self._on_list_changed)
                await anyio.sleep_forever()
        finally:
            self._client = None
            self._caller = None
            self._lane = None
            if self.state is State.UP:
                self.state = State.RESTARTING  # never "up" without a client: calls would fail, not wait

    @abstractmethod
    async def _on_message(self, message: Any) -> None:
        """A notification from the server (list changes, resource updates, URL elicitations completed)."""

    @abstractmethod
    async def request(
        self,
        request: types.ClientRequest,
        result_type: type[R] | TypeAdapter[R],
        *,
        progress: ProgressFn | None = None,
    ) -> R:
        """Send one request with this server's timeout (resource subscriptions are renewed with it on connect)."""
