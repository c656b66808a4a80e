"""A caller's W3C trace context (`traceparent`/`tracestate` in `_meta`, as the MCP semantic conventions carry it)
passed on to the downstream when this gateway does not trace.

Tracing, the SDK's SERVER span (or the lanes' `telemetry.server_span`) is the child of the caller's span and the
downstream request carries the gateway's CLIENT span. Not tracing, OpenTelemetry's no-op tracer keeps a
remote parent current only if someone makes it current: `adopted` does, so the SDK's outbound request injects
the caller's context unchanged and the downstream joins the caller's trace, the gateway invisible in it.
"""

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace

from gateway.sdk import extract_trace_context

seen = False
"""Whether any call came with a trace context this gateway did not trace: only then is a call's trace id read
when recording it untraced (a contextvar read per call saved for everyone else)."""


def note(meta: Mapping[str, Any] | None) -> None:
    """A request came (on any path: the SDK's or a lane) with a trace context: from now on, untraced calls read it
    and the downstream lanes pass it on, as the SDK's own client does."""
    global seen
    if not seen and meta and "traceparent" in meta:
        seen = True


@contextmanager
def adopted(meta: Mapping[str, Any]) -> Iterator[None]:
    """The caller's trace context current while inside (nothing without a valid `traceparent`)."""
    context = extract_trace_context(meta) if "traceparent" in meta else None
    if context is None:
        yield
        return
    note(meta)
    token = otel_context.attach(context)
    try:
        yield
    finally:
        otel_context.detach(token)


def current_trace_id() -> int | None:
    context = trace.get_current_span().get_span_context()
    return context.trace_id if context.is_valid else None
