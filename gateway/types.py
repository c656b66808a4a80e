"""The shared vocabulary: aliases and protocols every module may import (a leaf; imports only the SDK)."""

from collections.abc import Awaitable, Callable
from typing import Any

import mcp.types as types
from mcp.server import ServerRequestContext
from mcp.shared.dispatcher import ProgressFnT

ProgressFn = ProgressFnT
"""Relays a downstream's progress (progress, total, message) to the client that asked for it."""

JsonObject = dict[str, Any]
"""A JSON object as parsed: tool arguments, params, structured content."""

CallTool = Callable[[str, JsonObject], Awaitable[types.CallToolResult]]
"""Calls a catalog tool by its exposed name through the gateway (hosted tools and version sources use it)."""

RequestCtx = ServerRequestContext[Any]
"""What an SDK request handler receives (the session, the request's meta, the HTTP request if any)."""
