"""What both fronts' lanes answer to a `tools/call`: the call through the front's pipeline, shaped for the wire as
the SDK's server runner shapes it (`ServerRunner._serialize`: the per-version sieve; in the 2026 era
`resultType` and the gateway's `serverInfo` stamp), inside the SDK's SERVER span."""

import logging
import weakref
from typing import Any

from mcp.server.runner import modern_error_data
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    SERVER_INFO_META_KEY,
    ClientCapabilities,
    ErrorData,
)
from mcp_types import methods as spec
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from opentelemetry.trace import StatusCode
from pydantic import ValidationError

from gateway import telemetry
from gateway.downstreams.relay import Relay
from gateway.errors import jsonrpc_error
from gateway.fronts import eras
from gateway.fronts.auth.callers import Caller
from gateway.fronts.server import Front
from gateway.inflight import Peer

logger = logging.getLogger(__name__)


async def answer_tool_call(
    front: Front, caller: Caller, request_id: str | int, params: dict[str, Any], version: str
) -> tuple[dict[str, Any], ErrorData | None]:
    """The JSON-RPC response to a validated `tools/call`, and the error it carries (None for a result).

    A bug below becomes INTERNAL_ERROR for this call, as at the SDK's boundary, never a dropped connection.
    """
    name: str = params["name"]
    meta = params.get("_meta")
    with telemetry.server_span("tools/call", name, request_id, version, meta if isinstance(meta, dict) else {}) as span:
        try:
            modern = version in MODERN_PROTOCOL_VERSIONS
            declared = _declared(meta) if modern else None
            peer = lane_peer(front.relay, caller.key, modern, declared)
            session = front.sessions.get(caller.key, caller.identity, roaming=caller.roaming)
            if session.client is None:  # as the SDK path notes it (`Front._caller`)
                session.client = _client_name(meta) if modern else _client_name_of(peer.session)
            result = await front.call_tool(caller, name, params.get("arguments"), peer)
        except Exception as exc:  # the SDK's boundary
            logger.exception("tools/call %s failed", name)
            error = modern_error_data(exc)
            span.set_status(StatusCode.ERROR, error.message)
            body = jsonrpc_error(request_id, error.code, error.message, error.data)
            return body, error
        telemetry.tool_outcome(span, bool(getattr(result, "is_error", False)))  # or input-required
        dumped = eras.adapted(result, version).model_dump(by_alias=True, mode="json", exclude_none=True)
        del result
        dumped = spec.serialize_server_result("tools/call", version, dumped)
        if version in MODERN_PROTOCOL_VERSIONS:
            if dumped.get("resultType") is None:
                dumped["resultType"] = "complete"
            dumped["_meta"] = {**(dumped.get("_meta") or {}), SERVER_INFO_META_KEY: _server_info(front)}
        return {"jsonrpc": "2.0", "id": request_id, "result": dumped}, None


def _server_info(front: Front) -> dict[str, Any]:
    """The gateway's `serverInfo` stamp, dumped once per server: the SDK's property deep-copies it on every access
    so no caller can change it; a lane's answer is encoded as it is and never changed."""
    found = _SERVER_INFO.get(front.server)
    if found is None:
        found = _SERVER_INFO[front.server] = front.server.server_info_stamp
    return found


_SERVER_INFO: "weakref.WeakKeyDictionary[Any, dict[str, Any]]" = weakref.WeakKeyDictionary()


def _declared(meta: Any) -> ClientCapabilities | None:
    """The client capabilities a 2026-era request declares in its envelope (what a downstream may be offered)."""
    global _last_declared
    try:
        raw = meta[CLIENT_CAPABILITIES_META_KEY]
        if _last_declared is None or _last_declared[0] != raw:  # a client declares the same on every call
            _last_declared = (raw, ClientCapabilities.model_validate(raw))
    except (KeyError, TypeError, ValidationError):
        return None
    return _last_declared[1]


_last_declared: tuple[Any, ClientCapabilities] | None = None
"""The last capabilities an envelope declared, and their model (shared, as `Peer.capabilities` are: read only)."""


def _client_name(meta: Any) -> str | None:
    """The `clientInfo.name` a 2026-era request carries in its envelope (the SDK's ladder checked it is there)."""
    info = meta.get(CLIENT_INFO_META_KEY) if isinstance(meta, dict) else None
    name = info.get("name") if isinstance(info, dict) else None
    return name if isinstance(name, str) else None


def _client_name_of(connection: Any) -> str | None:
    """The `clientInfo.name` a handshake-era session's client sent in `initialize`."""
    params = getattr(connection, "client_params", None)
    return None if params is None else params.client_info.name


def lane_peer(relay: Relay, key: str, modern: bool, declared: ClientCapabilities | None) -> Peer:
    """The client end of a lane's call. A 2026-era client gets a downstream's input request back in the answer
    (`declared`: the capabilities its request carries); a handshake-era one is asked on its session's connection
    (the lane answers in plain JSON), with that connection's capabilities and log level."""
    connection = None if modern else relay.connection(key)
    capabilities = declared if connection is None else connection.client_capabilities
    return Peer(key, connection, None, capabilities, modern, None if modern else relay.logs.level(key))


def may_be_asked(relay: Relay, key: str) -> bool:
    """Whether a downstream could ask this handshake-era client something (it declared sampling, elicitation or
    roots): its calls then take the SDK path, whose response stream carries those requests."""
    connection = relay.connection(key)
    if connection is None:  # `initialized` not seen yet (a concurrent POST): assume it may be asked
        return True
    caps = connection.client_capabilities
    return caps is not None and any((caps.sampling, caps.elicitation, caps.roots))
