"""The door: where a request, whichever way it came in, becomes the `Call` that travels to the answer (DESIGN §2).

Every way in (the SDK's handlers, the stdio and HTTP lanes, a task run) hands over what it read off its wire: the
caller, the method and params, the protocol version, the envelope's `_meta`, the SDK connection the request came
on (None for a 2026-era lane call, which has none). `Door.open` does the rest once, in one place: the caller's
session, the client's name on first sight (exposure rules match it; with the identity it names the client), the
task mark a client of its version gets, the caller's trace context noted, and the client end (`Peer`) where the
relay sends what a downstream asks during the call.
"""

from collections.abc import Callable, Mapping
from typing import Any

import mcp.types as types
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, LOG_LEVEL_META_KEY
from pydantic import ValidationError

from gateway.downstreams.relay import Relay
from gateway.fronts import tasks_offer
from gateway.fronts.auth.callers import Caller
from gateway.inflight import Peer, offered
from gateway.pipeline import Call
from gateway.sdk import ProgressFn
from gateway.session import SessionStore
from gateway.telemetry import tracecontext


class Door:
    """Builds the `Call` of every request (`open`), for the front whose sessions and relay it holds."""

    def __init__(self, sessions: SessionStore, relay: Relay, offers_tasks: Callable[[], bool]) -> None:
        self.sessions = sessions
        self.relay = relay
        self.offers_tasks = offers_tasks
        self._declared: tuple[Any, types.ClientCapabilities] | None = None
        """The last capabilities an envelope declared, and their model (a client declares the same on every call;
        shared, as `Peer.capabilities` are: read only)."""
        self._offers: tuple[types.ClientCapabilities, dict[str, Any]] | None = None

    def open(
        self,
        caller: Caller,
        method: str,
        params: dict[str, Any],
        *,
        version: str | None,
        meta: Mapping[str, Any] | None,
        connection: Any,
        request_id: types.RequestId | None = None,
        progress: ProgressFn | None = None,
    ) -> Call:
        """The `Call` of `caller`'s request (`connection`: the SDK's, with its `client_params` and capabilities;
        None where the request has none: a 2026-era lane call, a task run for a client that may be gone)."""
        tracecontext.note(meta)
        modern = version in MODERN_PROTOCOL_VERSIONS
        session = self.sessions.get(caller.key, caller.identity, roaming=caller.roaming)
        if session.client is None:
            session.client = _client_name(meta if modern else None, connection)
        if session.task_mark is None and version is not None and self.offers_tasks():
            session.task_mark = tasks_offer.mark(version)
        if connection is not None:
            capabilities = connection.client_capabilities
        else:
            capabilities = self._capabilities(meta) if modern else None
        level = (meta or {}).get(LOG_LEVEL_META_KEY) if modern else self.relay.logs.level(caller.key)
        peer = Peer(
            caller.key, connection, request_id, capabilities, modern, level, offered=self._offered(capabilities)
        )
        return Call(session, method, params, progress=progress, secrets=caller.secrets, peer=peer, version=version)

    def _offered(self, capabilities: types.ClientCapabilities | None) -> dict[str, Any] | None:
        """The dump of what `capabilities` offer a downstream, once per capabilities object (a session's calls, and a
        2026-era client's repeated declaration, share one)."""
        if capabilities is None:
            return None
        if self._offers is None or self._offers[0] is not capabilities:
            self._offers = (capabilities, offered(capabilities))
        return self._offers[1]

    def _capabilities(self, meta: Mapping[str, Any] | None) -> types.ClientCapabilities | None:
        """The client capabilities a 2026-era request declares in its envelope (what a downstream may be offered)."""
        try:
            raw = meta[CLIENT_CAPABILITIES_META_KEY]  # type: ignore[index]
            if self._declared is None or self._declared[0] != raw:
                self._declared = (raw, types.ClientCapabilities.model_validate(raw))
        except (KeyError, TypeError, ValidationError):
            return None
        return self._declared[1]


def _client_name(meta: Mapping[str, Any] | None, connection: Any) -> str | None:
    """The `clientInfo.name` a handshake-era client sent in `initialize`, or a 2026-era request's envelope carries."""
    params = getattr(connection, "client_params", None)
    if params is not None:
        return str(params.client_info.name)
    info = None if meta is None else meta.get(CLIENT_INFO_META_KEY)
    name = info.get("name") if isinstance(info, dict) else None
    return name if isinstance(name, str) else None
