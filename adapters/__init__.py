"""Client transports for downstream MCP servers, built from their config entries."""

from typing import assert_never

from mcp.client import Transport

from adapters.http import http_transport
from adapters.sse import sse_transport
from adapters.stdio import stdio_transport
from gateway.config import HttpServerConfig, SseServerConfig, StdioServerConfig

__all__ = ["http_transport", "sse_transport", "stdio_transport", "target"]


def target(config: StdioServerConfig | HttpServerConfig | SseServerConfig, *, max_message_bytes: int) -> Transport:
    """A fresh, single-use transport for `mcp.Client`; build a new one for every (re)connect.

    `max_message_bytes` is the global `limits.max_message_bytes`; a server's own override wins.
    """
    match config:
        case StdioServerConfig():
            limit = config.max_message_bytes if config.max_message_bytes is not None else max_message_bytes
            return stdio_transport(config, max_message_bytes=limit)
        case HttpServerConfig():
            return http_transport(config, max_message_bytes=max_message_bytes)
        case SseServerConfig():
            limit = config.max_event_bytes if config.max_event_bytes is not None else max_message_bytes
            return sse_transport(config, max_event_bytes=limit)
        case _:
            assert_never(config)
