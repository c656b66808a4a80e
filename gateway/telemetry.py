"""Tracer provider set-up (none | console | otlp, from config or OTEL_* variables) and the gateway's span attributes.

The SDK already opens a SERVER span per inbound message and a CLIENT span per outbound request and
propagates W3C trace context in `_meta`; the gateway only installs a provider and annotates.
"""

import logging
import os
import sys
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor

from gateway.config import Telemetry

logger = logging.getLogger(__name__)

SERVER = "gateway.server"
TOOL = "gateway.tool"
METHOD = "gateway.method"
REQUEST_BYTES = "gateway.request.bytes"
RESPONSE_BYTES = "gateway.response.bytes"

tracer = trace.get_tracer("mcp-gateway")


def configure(config: Telemetry) -> TracerProvider | None:
    """Install a global tracer provider unless the exporter is `none`; returns it so the caller can shut it down."""
    exporter = config.exporter or os.environ.get("OTEL_TRACES_EXPORTER", "none").strip().lower()
    if exporter in ("none", ""):
        return None
    provider = TracerProvider(resource=Resource.create({"service.name": config.service_name}))
    match exporter:
        case "console":
            # stdout may be the MCP wire (stdio front): spans go to stderr.
            provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
        case "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            kwargs: dict[str, Any] = {"endpoint": config.endpoint} if config.endpoint else {}
            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(**kwargs)))
        case _:
            logger.warning("unknown traces exporter %r (expected none, console or otlp); tracing is off", exporter)
            return None
    trace.set_tracer_provider(provider)
    return provider


def annotate(**attributes: Any) -> None:
    """Set attributes on the current span (the SDK's SERVER span inside a handler); None values are skipped."""
    span = trace.get_current_span()
    for key, value in attributes.items():
        if value is not None:
            span.set_attribute(key, value)


def event(name: str, **attributes: Any) -> None:
    """Record a span event on the current span (e.g. gateway.size_guard.spilled with sizes)."""
    trace.get_current_span().add_event(name, {k: v for k, v in attributes.items() if v is not None})
