"""A refused opening request never fixes a stdio connection's era.

A dual-era client on stdio opens with a `server/discover` probe and falls back to `initialize` on any error
that is not a recognized modern one (2026-07-28, basic/transports/stdio "Backward Compatibility"). The SDK's
loop (`serve_dual_era_loop`) fixes the connection's era on its first request, whatever the answer: Claude
Code's probe carries no `clientCapabilities`, the SDK refuses it (-32602, as the spec says: a required field
is missing) and locks the connection into the 2026 era, so the fallback `initialize` gets -32022 and the
client is locked out. The stdio front therefore answers an opening enveloped request the SDK's own envelope
ladder refuses here, before the SDK (and the front's lane) see it: only a request that passes the ladder
(a successful discover or call) or `initialize` decides the era.

An unsupported version (-32022) names every version the gateway serves, the handshake versions included:
a dual-era client picks a modern one and stays modern, a client that speaks only the handshake knows
`initialize` is still open to it.
"""

import mcp.types as types
from mcp.shared.inbound import InboundLadderRejection, classify_inbound_request
from mcp_types import PROTOCOL_VERSION_META_KEY, UNSUPPORTED_PROTOCOL_VERSION, UnsupportedProtocolVersionErrorData
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS

_OPEN = "Nothing was done and this connection is still open to either era: send {what}, or `initialize`."


def refusal(message: types.JSONRPCMessage) -> types.JSONRPCError | None:
    """The answer to `message`, the connection's first request, when it must not decide the era: an enveloped
    (2026-era) request the SDK's ladder refuses. None for anything the SDK should see (and decide by)."""
    if not isinstance(message, types.JSONRPCRequest) or message.method == "initialize":
        return None
    meta = (message.params or {}).get("_meta")
    if not isinstance(meta, dict) or PROTOCOL_VERSION_META_KEY not in meta:
        return None  # a handshake-era request: the SDK opens the handshake era and answers it
    route = classify_inbound_request({"method": message.method, "params": message.params})
    if not isinstance(route, InboundLadderRejection):
        return None
    if route.code == UNSUPPORTED_PROTOCOL_VERSION:
        requested = meta[PROTOCOL_VERSION_META_KEY]
        supported = list(reversed(KNOWN_PROTOCOL_VERSIONS))
        data = UnsupportedProtocolVersionErrorData(supported=supported, requested=str(requested))
        text = (
            f"Unsupported protocol version {requested!r}: the gateway serves {', '.join(supported)}. "
            + _OPEN.format(what=f"the request again at {supported[0]}")
        )
        error = types.ErrorData(code=route.code, message=text, data=data.model_dump(mode="json"))
    else:
        what = "the request again with the missing `_meta` fields"
        error = types.ErrorData(code=route.code, message=f"{route.message}. {_OPEN.format(what=what)}", data=route.data)
    return types.JSONRPCError(jsonrpc="2.0", id=message.id, error=error)
