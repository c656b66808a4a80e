"""Legacy HTTP+SSE transport: the SDK's `sse_client` with a configurable event cap and survivable POST errors."""

import logging
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from urllib.parse import urljoin, urlparse

import anyio
import httpx2
import mcp.types as types
from anyio.abc import TaskStatus
from mcp.client.sse import remove_request_params
from mcp.shared.message import SessionMessage

from adapters.http import SSE_FRAMING_BYTES, http_timeout
from gateway.config import SseServerConfig
from gateway.sdk import (
    ContextReceiveStream,
    ContextSendStream,
    TransportStreams,
    create_context_streams,
    create_mcp_http_client,
    redirect_note,
    request_within_origin,
    resync_tracer,
    sse_within_origin,
)

logger = logging.getLogger(__name__)

# How much of an error response body to quote in the error the caller sees.
_BODY_QUOTE_CHARS = 200

ReadSend = ContextSendStream[SessionMessage | Exception]


@asynccontextmanager
async def sse_transport(
    config: SseServerConfig, *, max_event_bytes: int, auth: httpx2.Auth | None = None
) -> AsyncGenerator[TransportStreams]:
    """Open the event stream, wait for the endpoint event, then POST each outgoing message to it (`auth`: one
    person's OAuth, on the stream and every POST).

    Raises:
        httpx2.HTTPError: the event stream could not be opened (the status error names the code).
    """
    url = config.url
    logger.debug("connecting to SSE endpoint %s", remove_request_params(url))
    async with (
        create_mcp_http_client(
            headers=dict(config.headers), timeout=http_timeout(config.timeout_s), auth=auth
        ) as client,
        sse_within_origin(client, url, max_event_size=max_event_bytes + SSE_FRAMING_BYTES) as events,
    ):
        events.response.raise_for_status()
        read_send, read_recv = create_context_streams[SessionMessage | Exception](0)
        write_send, write_recv = create_context_streams[SessionMessage](0)
        async with read_send, read_recv, write_send, write_recv, anyio.create_task_group() as tg:
            endpoint: str = await tg.start(_read_events, events, url, read_send, max_event_bytes)
            tg.start_soon(_post_messages, client, endpoint, write_recv, read_send)
            try:
                yield read_recv, write_send
            finally:
                tg.cancel_scope.cancel()
    await resync_tracer()


async def _read_events(
    events: httpx2.EventSource,
    url: str,
    read_send: ReadSend,
    limit: int,
    *,
    task_status: TaskStatus[str] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Forward `message` events; report the `endpoint` event to the starter.

    Ending (server gone, or an event over the cap, after which the stream cannot be resynchronised)
    closes the read stream, so pending and later calls fail with "Connection closed" while the
    `async with` itself stays clean for the owner to tear down and reconnect.
    """
    started = False
    try:
        async with read_send:
            async for sse in events:
                if sse.event == "endpoint" and started:
                    logger.warning("ignoring a second endpoint event from %s", url)
                elif sse.event == "endpoint":
                    endpoint = urljoin(url, sse.data)
                    if urlparse(endpoint)[:2] != urlparse(url)[:2]:
                        raise ValueError(f"SSE endpoint origin does not match connection origin: {endpoint}")
                    task_status.started(endpoint)
                    started = True
                elif sse.event == "message":
                    if sse.data:  # empty data is a keep-alive
                        await read_send.send(_parse(sse.data))
                else:
                    logger.warning("ignoring unknown SSE event %r from %s", sse.event, url)
    except httpx2.SSEError as exc:
        logger.error("SSE stream from %s failed (max_event_bytes is %d): %s", url, limit, exc)
        if not started:
            raise
    except httpx2.HTTPError as exc:
        logger.warning("SSE stream from %s ended: %r", url, exc)
        if not started:
            raise
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass  # the session is gone
    if not started:
        raise ConnectionError(f"SSE stream from {url} ended before announcing its message endpoint")


def _parse(data: str) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(data, by_name=False))
    except ValueError as exc:
        logger.warning("SSE message is not JSON-RPC: %s", exc)
        return exc


async def _post_messages(
    client: httpx2.AsyncClient,
    endpoint: str,
    write_recv: ContextReceiveStream[SessionMessage],
    read_send: ReadSend,
) -> None:
    async with write_recv:
        async for message in write_recv:
            sender = write_recv.last_context
            if sender is None:
                await _post(client, endpoint, message, read_send)
                continue
            # Posting inside the sender's contextvars keeps trace context on the outgoing request.
            async with anyio.create_task_group() as tg:
                sender.run(tg.start_soon, _post, client, endpoint, message, read_send)


async def _post(client: httpx2.AsyncClient, endpoint: str, message: SessionMessage, read_send: ReadSend) -> None:
    """POST one message; a failure fails that request only, never the connection."""
    body = message.message.model_dump_json(by_alias=True, exclude_unset=True)
    try:
        response = await request_within_origin(
            client, "POST", endpoint, content=body, headers={"content-type": "application/json"}
        )
    except httpx2.HTTPError as exc:
        await _fail(message, f"POST to {remove_request_params(endpoint)} failed: {exc!r}", read_send)
        return
    if response.is_success:
        return
    quote = response.text[:_BODY_QUOTE_CHARS].strip()
    reason = f"HTTP {response.status_code} {response.reason_phrase}{redirect_note(response)}"
    await _fail(message, f"server answered {reason}: {quote}" if quote else f"server answered {reason}", read_send)


async def _fail(message: SessionMessage, reason: str, read_send: ReadSend) -> None:
    outgoing = message.message
    if not isinstance(outgoing, types.JSONRPCRequest):
        logger.warning("could not deliver %s to the SSE server: %s", type(outgoing).__name__, reason)
        return
    logger.warning("request %r (%s) to the SSE server failed: %s", outgoing.id, outgoing.method, reason)
    error = types.ErrorData(code=types.INTERNAL_ERROR, message=reason)
    try:
        await read_send.send(SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=outgoing.id, error=error)))
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        logger.debug("read stream closed before request %r could be failed", outgoing.id)
