"""The one recognizer of a plain `tools/call`: the call a lane may serve without the SDK's per-request
machinery. It is the lanes' only caller of the SDK's envelope ladder (`classify_inbound_request`) and of its
per-version params check, so a lane and the SDK path accept exactly the same requests; whatever is not plain
goes to the SDK."""

import json
from collections.abc import Mapping
from typing import Any

from mcp.shared.inbound import InboundModernRoute, classify_inbound_request
from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY
from mcp_types import methods as spec
from pydantic import ValidationError

from gateway.fronts.tasks_offer import declares

RequestId = str | int
ROUNDS = frozenset({"inputResponses", "requestState"})
"""A 2026-era retry's answers to input requests: the relay's concern, carried by the SDK path (`Front.call_tool`)."""


def decode(body: bytes) -> Any:
    """The JSON in `body`, or None when it is not JSON (the SDK answers that)."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def envelope_version(params: Any) -> Any:
    """The protocol version a 2026-era request carries in its `_meta` envelope (None: a handshake-era request)."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get(PROTOCOL_VERSION_META_KEY) if isinstance(meta, dict) else None


def modern_version(message: Any, headers: Mapping[str, str] | None = None) -> str | None:
    """The 2026-era version the SDK's envelope ladder serves `message` at; None: it would not route it."""
    if not isinstance(message, dict):
        return None
    route = classify_inbound_request(message, headers=dict(headers) if headers is not None else None)
    return route.protocol_version if isinstance(route, InboundModernRoute) else None


def plain_params(params: Any, version: str, passed: Any = None) -> bool:
    """`tools/call` params a lane may serve at `version`: an object whose `_meta`, if any, is an object without a
    progress token (progress needs the SDK's relay), that answers no input round (`ROUNDS`), that may not become a
    task (no `task`, no tasks extension declared), valid under the SDK's per-version surface.

    `passed`: a 2026-era envelope that passed here before at `version`. A client sends the same one with every
    call; equal to it (as the door's cache of its capabilities compares), the rest is checked beside the least
    envelope the surface takes, as validating the whole envelope again cost more than the rest of the check."""
    if not isinstance(params, dict) or not ROUNDS.isdisjoint(params):
        return False
    meta = params.get("_meta")
    if meta is not None and (not isinstance(meta, dict) or "progressToken" in meta):
        return False
    if params.get("task") is not None:  # it may become a task: `fronts.tasks_wire` decides
        return False
    if passed is not None and meta == passed:  # what it declares passed with it: no tasks extension
        params = {**params, "_meta": {PROTOCOL_VERSION_META_KEY: version, CLIENT_CAPABILITIES_META_KEY: {}}}
    elif declares(params):  # the tasks extension declared: it may become a task, as above
        return False
    try:
        spec.validate_client_request("tools/call", version, params)
    except (ValidationError, KeyError):
        return False
    return True


def plain_call(decoded: Any, version: str) -> tuple[RequestId, dict[str, Any]] | None:
    """(id, params) of a JSON-RPC `tools/call` request with plain params at `version`; None sends it to the SDK."""
    if not isinstance(decoded, dict) or decoded.get("jsonrpc") != "2.0" or decoded.get("method") != "tools/call":
        return None
    request_id, params = decoded.get("id"), decoded.get("params")
    if isinstance(request_id, bool) or not isinstance(request_id, str | int) or not isinstance(params, dict):
        return None
    return (request_id, params) if plain_params(params, version) else None
