"""The one module that reaches into the mcp SDK's private names.

The gateway's lanes and transports need a few things the SDK keeps private: its transport and stream
protocols, its HTTP client factory and origin checks, its trace-context helpers, and the per-era
envelope a client session stamps on each request. Everything else imports them from here, so an SDK
upgrade that moves or changes one fails in this file and in `tests/test_sdk_seam.py`, not in eight
places. The names are re-exported unchanged; the envelope stamp is wrapped so its in-place contract
is written down once.
"""

from typing import Any

from mcp.client._transport import Transport, TransportStreams
from mcp.client.session import ClientSession
from mcp.shared._compat import resync_tracer
from mcp.shared._context_streams import ContextReceiveStream, ContextSendStream, create_context_streams
from mcp.shared._httpx_utils import create_mcp_http_client, redirect_note, request_within_origin, sse_within_origin
from mcp.shared._otel import extract_trace_context
from mcp.shared._stream_protocols import ReadStream, WriteStream

__all__ = [
    "ContextReceiveStream",
    "ContextSendStream",
    "ReadStream",
    "Transport",
    "TransportStreams",
    "WriteStream",
    "create_context_streams",
    "create_mcp_http_client",
    "extract_trace_context",
    "redirect_note",
    "request_within_origin",
    "resync_tracer",
    "sse_within_origin",
    "stamp_envelope",
]


def stamp_envelope(session: ClientSession, message: dict[str, Any]) -> dict[str, Any]:
    """Add what the session's negotiated era requires to an outgoing request, as the SDK itself would.

    `message` is `{"method": ..., "params": {...}}`; the SDK's `_stamp` mutates `message["params"]` in
    place (in the 2026-07-28 era it adds `_meta` with the protocol version, client info and
    capabilities; in the handshake era nothing). Returns the (same) params for convenience.
    """
    session._stamp(message, {})
    params: dict[str, Any] = message["params"]
    return params
