"""One supervised downstream MCP server: connect, watch, restart with backoff, timeouts, error mapping."""

import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from enum import StrEnum
from typing import Any, Self, TypeVar

import anyio
import mcp.types as types
from mcp import Client, ClientSession, MCPError
from mcp.client import advertise
from mcp.server import Server
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from mcp_types import SERVER_INFO_META_KEY
from pydantic import BaseModel, TypeAdapter, ValidationError

from adapters.lane import Lane
from adapters.link import Connector, opened
from adapters.streams import watched
from gateway import __version__, sdk
from gateway.downstreams import changes, listing, tasks
from gateway.downstreams.callers import SessionCaller, ToolCaller, caller_for
from gateway.downstreams.deadline import Deadline
from gateway.downstreams.inflight import InFlight
from gateway.downstreams.subscriptions import Subscriptions
from gateway.errors import DownstreamFailed, DownstreamTimeout, DownstreamUnavailable, describe, from_downstream
from gateway.sdk import ProgressFn

logger = logging.getLogger(__name__)
MCP_APPS = advertise("io.modelcontextprotocol/ui", {"mimeTypes": ["text/html;profile=mcp-app"]})
"""MCP Apps, declared to every server: the gateway relays them whole (gateway.routing.apps), and a server SHOULD list
its UI tools only to a client that declares them; a client that renders no UI gets the text every such tool returns."""

Target = Connector | Server[Any]
ListChanged = Callable[[str, str], None]
"""Called with (server, kind) where kind is "tools", "resources" or "prompts"."""

R = TypeVar("R", bound=BaseModel)
_MODES: dict[str, str] = {"auto": "auto", "legacy": "legacy", "modern": "2026-07-28"}


class State(StrEnum):
    STARTING = "starting"
    UP = "up"
    RESTARTING = "restarting"
    DOWN = "down"
    IDLE = "idle"
    """A per-user server (`downstreams.pool`) with no user's process running: the next call starts one."""


class Downstream:
    """A downstream server behind one long-lived `mcp.Client`, shared by all client sessions.

    Use as `async with`: entering starts the owner task (which connects, and reconnects with
    exponential backoff whenever the connection is lost); leaving closes the connection and, for
    stdio servers, the whole process group.
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
        self._mode = _MODES[protocol]
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

    async def __aenter__(self) -> Self:
        self._tg = await anyio.create_task_group().__aenter__()
        self._tg.start_soon(self._run, name=f"downstream {self.name}")
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        assert self._tg is not None
        tg, self._tg = self._tg, None
        self._stopping = True
        tg.cancel_scope.cancel()
        await tg.__aexit__(*exc_info)

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
            except TimeoutError:
                self.last_error = f"no handshake within {self._connect_timeout_s:g} s (connect_timeout_s)"
            except Exception as exc:  # noqa: BLE001 -- any failure to connect is retried, never fatal
                self.last_error = describe(exc)
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

    async def _on_message(self, message: Any) -> None:
        kind = changes.kind_of(message)
        if kind is not None:
            self._on_list_changed(self.name, kind)
        elif isinstance(message, types.ResourceUpdatedNotification) and self._on_resource_updated is not None:
            # A 2026-era server's updates come on the listen streams `subscribe` holds (the SDK also hands
            # each to this handler): relayed there once, not twice.
            if self.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                await self._on_resource_updated(self.name, message.params.uri)
        elif isinstance(message, types.ElicitCompleteNotification) and self._on_elicitation_complete is not None:
            await self._on_elicitation_complete(self.name, message.params.elicitation_id)

    @property
    def capabilities(self) -> types.ServerCapabilities | None:
        """What the server declared on its current connection (None while not connected, or unknown: pinned
        to 2026-07-28 without a discovery)."""
        if self._client is None or self._mode == _MODES["modern"]:
            return None
        return self._client.server_capabilities

    @property
    def watching(self) -> bool:
        """Whether some client is subscribed to one of this server's resources through it."""
        return bool(self._subscriptions)

    async def subscribe(self, uri: str, on: bool) -> None:
        """Start (or stop) hearing about changes of one resource: `resources/subscribe`, or a 2026-era listen stream."""
        self._subscriptions.remember(uri, on)
        client, _ = await self._session()
        await self._subscriptions.ask(client, uri, on, self.request, self._tg)

    def release(self, uri: str) -> None:
        """No client watches `uri` any more (its last subscriber's session ended, seen by a finalizer that cannot
        wait): forget it at once, so an idle per-user process can stop, and tell the server in the background."""
        self._subscriptions.remember(uri, False)
        if self._tg is not None and self._client is not None:
            self._tg.start_soon(self._subscriptions.leave, self._client, uri, self.request, self._tg)

    async def notify(self, notification: types.ClientNotification) -> None:
        """Send a notification if connected (a server that is down has nothing to be told)."""
        client = self._client
        if client is not None:
            await client.session.send_notification(notification)

    # -- calls ---------------------------------------------------------------------------------

    async def _session(self) -> tuple[Client, ClientSession]:
        gone = self._client is None or self._lost.is_set()
        if gone and self.state is not State.DOWN:
            # A (re)start is under way, or the connection just died and the owner task has not torn
            # it down yet: wait for the next attempt's outcome rather than fail the call.
            with anyio.move_on_after(self._connect_timeout_s):
                await self._attempt.wait()
        client = self._client
        if client is None:
            raise DownstreamUnavailable(self.name, self.state.value, self.last_error)
        return client, client.session

    @contextmanager
    def _failures(self, client: Client) -> Iterator[None]:
        """Map a failed request to `DownstreamError` by what happened: the connection ended (its read stream or
        its lane closed, or it was replaced), the time limit passed, or the server answered with an error."""
        started = anyio.current_time()
        try:
            yield
        except MCPError as exc:
            current = client is self._client
            lost = not current or self._lost.is_set() or (self._lane is not None and self._lane.closed)
            if lost and current:
                self._lost.set()
            timed_out = exc.code == types.REQUEST_TIMEOUT and anyio.current_time() - started >= self.timeout_s
            raise from_downstream(self.name, exc, self.timeout_s, lost=lost, timed_out=timed_out) from exc
        except ValidationError as exc:
            detail = f"it answered with an invalid result ({exc.error_count()} errors)."
            raise DownstreamFailed(self.name, detail) from exc

    async def request(
        self,
        request: types.ClientRequest,
        result_type: type[R] | TypeAdapter[R],
        *,
        progress: ProgressFn | None = None,
    ) -> R:
        """Send one request with this server's timeout; failures come back as `DownstreamError`."""
        client, session = await self._session()
        with self._calls.counted(), self._failures(client):
            return await session.send_request(
                request, result_type, request_read_timeout_seconds=self.timeout_s, progress_callback=progress
            )

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        progress: ProgressFn | None = None,
        extra: dict[str, Any] | None = None,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Call a tool; `extra` adds wire params (`_meta`, `inputResponses`, `requestState` of a 2026 round)."""
        client, session = await self._session()
        task_only = name in self.task_only and tasks.offers_tasks(self.capabilities)
        # A tool the server runs only as a task goes through its 2025 tasks; any other, the connection's caller.
        caller = tasks.TaskCaller(session) if task_only else self._caller or SessionCaller(session)
        limit = Deadline(self.timeout_s, self.max_timeout_s, progress)  # the server's progress extends it
        with self._calls.counted(), self._failures(client), limit.scope:
            result = await caller.call_tool(
                name, arguments, timeout_s=limit.most_s, progress=limit.progress, extra=extra
            )
        if limit.scope.cancelled_caught:
            raise DownstreamTimeout(self.name, *limit.limit)
        await limit.flush()
        if isinstance(result, types.InputRequiredResult):
            return result  # the relay answers it, or hands it to a 2026-era client
        if result.meta and SERVER_INFO_META_KEY in result.meta:
            # The downstream's identity stamp; the client's server is the gateway, which stamps its own.
            result.meta = {k: v for k, v in result.meta.items() if k != SERVER_INFO_META_KEY} or None
        return result

    async def list_all(self, kind: str) -> list[Any]:
        """Every page of tools, resources, resource templates or prompts; [] if the server lacks the capability.

        Entries are read one by one (`listing.read_page`): a bad one is repaired or left out, and named in
        `problems[kind]` (shown by `gateway.status`) and the log, instead of failing the whole listing.
        """
        client, session = await self._session()
        capability, request_type = _LISTS[kind]
        # A connection pinned to 2026-07-28 (`protocol: modern`) discovers nothing: its capabilities read empty.
        known = self._mode != _MODES["modern"]
        if known and getattr(client.server_capabilities, capability) is None:
            return []
        items: list[Any] = []
        problems: list[str] = []
        cursor: str | None = None
        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            with self._failures(client):
                page = await sdk.send_unvalidated(session, request_type(params=params), timeout_s=self.timeout_s)
            found, trouble, cursor = listing.read_page(kind, page)
            items.extend(found)
            problems.extend(trouble)
            if not cursor:
                break
        if kind == "tools":
            kept = sdk.absorb_tools(session, items)
            problems += [
                f"tool {t.name!r}: left out, its x-mcp-header annotations are invalid" for t in items if t not in kept
            ]
            items = kept
        if problems:
            logger.warning("server %s: %s listing: %s", self.name, kind, "; ".join(problems))
        self.problems[kind] = problems
        self.task_only = tasks.task_only(items) if kind == "tools" else self.task_only
        return items


# kind -> (capability, request)
_LISTS: dict[str, tuple[str, Any]] = {
    "tools": ("tools", types.ListToolsRequest),
    "resources": ("resources", types.ListResourcesRequest),
    "resource_templates": ("resources", types.ListResourceTemplatesRequest),
    "prompts": ("prompts", types.ListPromptsRequest),
}
