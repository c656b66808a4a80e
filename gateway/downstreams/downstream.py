"""One supervised downstream MCP server, as the gateway calls it: requests with the server's timeout, tool calls
(through the lane, the session or the server's tasks), listings read entry by entry, resource subscriptions, and
every failure mapped to a `DownstreamError` by what happened. The connection they travel is kept up by
`supervision.Supervised`."""

import logging
from collections.abc import Callable
from types import TracebackType
from typing import Any

import anyio
import mcp.types as types
from mcp import Client, ClientSession, MCPError
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from mcp_types import SERVER_INFO_META_KEY
from pydantic import TypeAdapter, ValidationError

from gateway import sdk
from gateway.downstreams import changes, listing, tasks
from gateway.downstreams.callers import SessionCaller
from gateway.downstreams.deadline import Deadline
from gateway.downstreams.state import State
from gateway.downstreams.supervision import MODES, R, Supervised
from gateway.errors import DownstreamFailed, DownstreamTimeout, DownstreamUnavailable, from_downstream
from gateway.sdk import ProgressFn

logger = logging.getLogger(__name__)


class Downstream(Supervised):
    """A downstream server and the requests sent to it; its connection is `Supervised`'s."""

    @property
    def capabilities(self) -> types.ServerCapabilities | None:
        """What the server declared on its current connection (None while not connected, or unknown: pinned
        to 2026-07-28 without a discovery)."""
        if self._client is None or self._mode == MODES["modern"]:
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

    async def _on_message(self, message: Any) -> None:
        kind = changes.kind_of(message)
        if kind is not None:
            # A 2026-era server's list changes come on the listen stream `changes.listen` holds (the SDK also hands
            # each to this handler): reported there once, not twice.
            if self.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                self._on_list_changed(self.name, kind)
        elif isinstance(message, types.ResourceUpdatedNotification) and self._on_resource_updated is not None:
            # A 2026-era server's updates come on the listen streams `subscribe` holds (the SDK also hands
            # each to this handler): relayed there once, not twice.
            if self.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                await self._on_resource_updated(self.name, message.params.uri)
        elif isinstance(message, types.ElicitCompleteNotification) and self._on_elicitation_complete is not None:
            await self._on_elicitation_complete(self.name, message.params.elicitation_id)

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

    def _failures(self, client: Client, limit: Deadline | None = None) -> "_Failures":
        """A block whose failed request is mapped to `DownstreamError` by what happened: the connection ended (its
        read stream or its lane closed, or it was replaced), the time limit passed (`limit`'s, if the call has one,
        else the server's timeout), or the server answered with an error."""
        return _Failures(self._failure, client, anyio.current_time() if limit is None else limit.started, limit)

    def _failure(
        self, client: Client, exc: MCPError | ValidationError, started: float, limit: Deadline | None
    ) -> Exception:
        """The `DownstreamError` of a request on `client`, begun at `started`, that failed with `exc`."""
        if isinstance(exc, ValidationError):
            return DownstreamFailed(self.name, f"it answered with an invalid result ({exc.error_count()} errors).")
        current = client is self._client
        lost = not current or self._lost.is_set() or (self._lane is not None and self._lane.closed)
        if lost and current:
            self._lost.set()
        timed_out = exc.code == types.REQUEST_TIMEOUT and anyio.current_time() - started >= self.timeout_s
        seconds, setting = (self.timeout_s, "timeout_s") if limit is None else limit.limit
        return from_downstream(self.name, exc, seconds, lost=lost, timed_out=timed_out, setting=setting)

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
        try:
            with self._calls.counted(), self._failures(client, limit):
                result = await caller.call_tool(name, arguments, limit=limit, extra=extra)
        except TimeoutError:  # `limit.kept` ended it (the lane raises the SDK's REQUEST_TIMEOUT instead)
            raise DownstreamTimeout(self.name, *limit.limit) from None
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
        known = self._mode != MODES["modern"]
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


class _Failures:
    """`Downstream._failures`'s block: a class, not a generator, as every forwarded call enters one (a generator's
    context manager costs four frames and a StopIteration a call)."""

    __slots__ = ("_client", "_limit", "_map", "_started")

    def __init__(
        self,
        map_failure: Callable[[Client, MCPError | ValidationError, float, Deadline | None], Exception],
        client: Client,
        started: float,
        limit: Deadline | None,
    ) -> None:
        self._map, self._client, self._started, self._limit = map_failure, client, started, limit

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if isinstance(exc, MCPError | ValidationError):
            raise self._map(self._client, exc, self._started, self._limit) from exc
