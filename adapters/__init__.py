"""Client transports for downstream MCP servers, built from their config entries."""

from typing import assert_never

import httpx2

from adapters.http import http_transport
from adapters.link import Connector, Link, linked, session_only
from adapters.sse import sse_transport
from adapters.stdio import stdio_transport
from gateway.config import HttpServerConfig, SseServerConfig, StdioServerConfig

__all__ = ["Connector", "Link", "http_transport", "session_only", "sse_transport", "stdio_transport", "target"]


def target(
    config: StdioServerConfig | HttpServerConfig | SseServerConfig,
    *,
    max_message_bytes: int,
    auth: httpx2.Auth | None = None,
) -> Connector:
    """A fresh, single-use connection for `mcp.Client` (and its lane); build a new one for every (re)connect.

    `max_message_bytes` is the global `limits.max_message_bytes`; a server's own override wins. `auth`: one person's
    OAuth on an HTTP or SSE server (`gateway.downstreams.oauth`).
    """
    match config:
        case StdioServerConfig():
            limit = config.max_message_bytes if config.max_message_bytes is not None else max_message_bytes
            return stdio_transport(config, max_message_bytes=limit)
        case HttpServerConfig():
            return linked(http_transport(config, max_message_bytes=max_message_bytes, auth=auth))
        case SseServerConfig():
            limit = config.max_event_bytes if config.max_event_bytes is not None else max_message_bytes
            return linked(sse_transport(config, max_event_bytes=limit, auth=auth))
        case _:
            assert_never(config)
