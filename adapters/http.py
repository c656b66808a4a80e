"""Streamable HTTP transport with the gateway's size cap and timeouts, owning its HTTP client."""

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import httpx2
from mcp.client.streamable_http import streamable_http_client

from gateway.config import HttpServerConfig
from gateway.sdk import TransportStreams, create_mcp_http_client

CONNECT_TIMEOUT_S = 30.0
# A response stream may legitimately idle for a whole request; never cut it before the call's own
# timeout could fire, and never below the SDK's 300 s default for long-lived SSE streams.
_READ_MARGIN_S = 30.0
_MIN_READ_TIMEOUT_S = 300.0
# An SSE event carries "event: message" and "data: " around the JSON; allow for it so a message of
# exactly the cap still fits.
SSE_FRAMING_BYTES = 1024


def http_timeout(timeout_s: float) -> httpx2.Timeout:
    """The httpx2 timeouts for a server whose requests may take `timeout_s`."""
    return httpx2.Timeout(CONNECT_TIMEOUT_S, read=max(timeout_s + _READ_MARGIN_S, _MIN_READ_TIMEOUT_S))


@asynccontextmanager
async def http_transport(
    config: HttpServerConfig, *, max_message_bytes: int, auth: httpx2.Auth | None = None
) -> AsyncGenerator[TransportStreams]:
    """Connect with `streamable_http_client`, lifting its 1 MiB SSE-event cap to our limit. `auth`: one person's
    OAuth (`gateway.downstreams.oauth`), on every request of this connection."""
    # The SDK closes only clients it created itself, so this one is ours to close.
    async with (
        create_mcp_http_client(
            headers=dict(config.headers), timeout=http_timeout(config.timeout_s), auth=auth
        ) as client,
        streamable_http_client(
            config.url, http_client=client, max_sse_event_size=max_message_bytes + SSE_FRAMING_BYTES
        ) as streams,
    ):
        yield streams
