"""An HTTP request whose `MCP-Protocol-Version` header disagrees with its body's version is refused, naming both.

2026-07-28 (basic/transports/streamable-http, "Protocol Version Header"): the header MUST match the body's
`_meta["io.modelcontextprotocol/protocolVersion"]`, else `400 Bad Request` with `HeaderMismatch` (-32020). The
SDK routes a POST by its header alone: a handshake-era (or absent) header sends a 2026-era body down the session
path, which answers "Missing session ID", and a modern header that disagrees gets a -32020 that names neither
value. A load balancer or policy that routes on the header and a server that executes the body would then act
on different versions; the client is told exactly what disagrees instead.

The hot path pays a byte search and one anchored match: the body is decoded only when the header and the
version found in the bytes differ (or the bytes cannot tell), to confirm it is the request's own `_meta`.
"""

import json
import re
from typing import Any

from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import HEADER_MISMATCH, PROTOCOL_VERSION_META_KEY
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.errors import jsonrpc_error
from gateway.fronts.lanes.http import replay
from gateway.fronts.respond import respond_json

_HEADER = MCP_PROTOCOL_VERSION_HEADER.lower().encode()
_NAME = "MCP-Protocol-Version"  # as the spec spells it (the SDK's constant is the lower-case wire key)
_KEY = json.dumps(PROTOCOL_VERSION_META_KEY).encode()
_VALUE = re.compile(re.escape(_KEY) + rb'\s*:\s*"([^"\\]*)"')


class VersionAgreement:
    """Pure ASGI middleware in front of /mcp: a POST whose header and body versions differ gets 400 and -32020."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != "/mcp":
            await self.app(scope, receive, send)
            return
        chunks = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away before its body was whole: nobody to answer
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        header = next((v.decode("latin-1") for k, v in scope["headers"] if k == _HEADER), None)
        refused = disagreement(header, body)
        if refused is None:
            await self.app(scope, replay(body, receive), send)
            return
        await respond_json(send, refused, 400)


def disagreement(header: str | None, body: bytes) -> dict[str, Any] | None:
    """The JSON-RPC error for a request `body` whose protocol version differs from the `header`'s, else None."""
    at = body.find(_KEY)
    if at < 0:
        return None  # no 2026-era envelope: nothing to agree with (the SDK checks what the header alone says)
    found = _VALUE.match(body, at)
    if found is not None and header is not None and found.group(1).decode("latin-1", "replace") == header:
        return None
    try:
        data = json.loads(body)
    except ValueError:
        return None  # the SDK answers a body that is not JSON
    params = data.get("params") if isinstance(data, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(PROTOCOL_VERSION_META_KEY) if isinstance(meta, dict) else None
    if data.get("method") == "initialize" or not isinstance(version, str) or version == header:
        return None  # initialize is handshake-era whatever it carries; a non-string version is the SDK's -32602
    said = "is missing" if header is None else f"says {header!r}"
    message = (
        f"Header mismatch: the {_NAME} header {said} but the request's "
        f"params._meta[{PROTOCOL_VERSION_META_KEY!r}] says {version!r}. Nothing was done; send the request "
        f"again with {_NAME}: {version} (the header repeats the body's version)."
    )
    request_id = data.get("id")
    return jsonrpc_error(request_id if isinstance(request_id, str | int) else None, HEADER_MISMATCH, message)
