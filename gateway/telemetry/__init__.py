"""Tracer provider set-up (none | console | otlp, from config or OTEL_* variables) and the gateway's span attributes.

The SDK opens a SERVER span per inbound message and a CLIENT span per outbound request and
propagates W3C trace context in `_meta`; the gateway installs a provider and annotates. Requests the
gateway's lanes carry past the SDK get the same spans from `server_span` and `adapters.lane`.
"""

import logging
import os
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.environment_variables import OTEL_PYTHON_TRACER_PROVIDER
from opentelemetry.metrics import Counter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.trace import INVALID_SPAN, NoOpTracerProvider, ProxyTracerProvider, Span, SpanKind, StatusCode

from gateway.config import TelemetryConfig
from gateway.sdk import extract_trace_context
from gateway.telemetry import tracecontext
from gateway.telemetry.operations import BUCKETS

logger = logging.getLogger(__name__)

SERVER = "gateway.server"
TOOL = "gateway.tool"
METHOD = "gateway.method"
REQUEST_BYTES = "gateway.request.bytes"
RESPONSE_BYTES = "gateway.response.bytes"

meter = metrics.get_meter("mcp-gateway")
# A proxy until a provider is installed, then the provider's tracer: safe to take at import.
_tracer = trace.get_tracer("mcp-gateway")
_counters: dict[str, Counter] = {}
metering = False
"""Whether a meter provider exports (console/otlp): only then are the MCP duration histograms fed per call."""
traced = False
"""Whether `configure` installed a tracer provider: a flag, where `tracing()` asks OpenTelemetry (and it the
environment) each time."""
_server_duration = meter.create_histogram(
    "mcp.server.operation.duration",
    unit="s",
    description="MCP request duration as observed on the gateway",
    explicit_bucket_boundaries_advisory=BUCKETS,
)
_client_duration = meter.create_histogram(
    "mcp.client.operation.duration",
    unit="s",
    description="The gateway's MCP request to a server, sent to answered",
    explicit_bucket_boundaries_advisory=BUCKETS,
)


def configure(config: TelemetryConfig) -> TracerProvider | None:
    """Install a global tracer provider unless the exporter is `none`; returns it so the caller can shut it down.

    Config wins over the standard variables: `OTEL_SDK_DISABLED`, `OTEL_TRACES_EXPORTER` (a comma-separated
    list), `OTEL_SERVICE_NAME` and, read by the OTLP exporter itself, `OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT`.
    """
    if config.exporter is not None:
        exporters: set[str] = {config.exporter}
    elif os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    else:
        exporters = {e.strip().lower() for e in os.environ.get("OTEL_TRACES_EXPORTER", "none").split(",")}
    exporters -= {"none", ""}
    unknown = exporters - {"console", "otlp"}
    if unknown:
        logger.warning("unknown traces exporter(s) %s (expected none, console or otlp); ignored", sorted(unknown))
    if not exporters - unknown:
        return None
    name = config.service_name or os.environ.get("OTEL_SERVICE_NAME") or "mcp-gateway"
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    if "console" in exporters:
        # stdout may be the MCP wire (stdio front): spans go to stderr.
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
    if "otlp" in exporters:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        kwargs: dict[str, Any] = {"endpoint": config.endpoint} if config.endpoint else {}
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(**kwargs)))
    trace.set_tracer_provider(provider)
    global traced
    traced = True
    _configure_metrics(exporters, provider.resource, metrics_endpoint(config.endpoint))
    return provider


def metrics_endpoint(traces_endpoint: str | None) -> str | None:
    """Where metrics go beside `telemetry.endpoint`: `…/v1/traces` becomes `…/v1/metrics`, a bare base URL gets
    `/v1/metrics`; None (no endpoint configured) follows `OTEL_EXPORTER_OTLP_[METRICS_]ENDPOINT`."""
    if not traces_endpoint:
        return None
    return traces_endpoint.rstrip("/").removesuffix("/v1/traces") + "/v1/metrics"


def _configure_metrics(exporters: set[str], resource: Resource, endpoint: str | None) -> None:
    """The decision counters go where the spans go (console: stderr; otlp: the collector the spans go to)."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, MetricReader, PeriodicExportingMetricReader

    readers: list[MetricReader] = []
    if "console" in exporters:
        readers.append(PeriodicExportingMetricReader(ConsoleMetricExporter(out=sys.stderr)))
    if "otlp" in exporters:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

        kwargs: dict[str, Any] = {"endpoint": endpoint} if endpoint else {}
        readers.append(PeriodicExportingMetricReader(OTLPMetricExporter(**kwargs)))
    metrics.set_meter_provider(MeterProvider(resource=resource, metric_readers=readers))
    global metering
    metering = True


@contextmanager
def exporting(config: TelemetryConfig) -> Iterator[None]:
    """Spans and counters are exported (per `configure`) while inside; flushed, within bounds, on the way out."""
    provider = configure(config)
    try:
        yield
    finally:
        if provider is not None:
            shutdown(provider)


def shutdown(provider: TracerProvider, timeout_s: float = 2.0) -> None:
    """Flush and stop the tracer and meter providers side by side, giving up after `timeout_s`.

    The OTLP exporter retries an unreachable collector for ~10 s; that must not hold the gateway's
    exit (a stdio client kills a gateway still running 2 s after closing its stdin anyway). Side by
    side, so spans stuck on a slow collector do not cost the last batch of metrics its turn.
    """
    meters = metrics.get_meter_provider()
    stops = [provider.shutdown, *([meters.shutdown] if hasattr(meters, "shutdown") else [])]
    workers = [threading.Thread(target=stop, name="otel-shutdown", daemon=True) for stop in stops]
    for worker in workers:
        worker.start()
    deadline = time.monotonic() + timeout_s
    for worker in workers:
        worker.join(max(0.0, deadline - time.monotonic()))


def recording() -> bool:
    """Whether the current span keeps attributes, so callers skip building ones that would be dropped (measuring a
    result). Without a provider nothing records: answered without looking the span up (every call asks)."""
    return tracing() and trace.get_current_span().is_recording()


def annotate(**attributes: Any) -> None:
    """Set attributes on the current span (the SDK's SERVER span inside a handler); None values are skipped."""
    span = trace.get_current_span()
    if not span.is_recording():
        return
    for key, value in attributes.items():
        if value is not None:
            span.set_attribute(key, value)


def event(name: str, **attributes: Any) -> None:
    """Record a decision: a span event on the current span (with its sizes) and one count on the counter `name`."""
    trace.get_current_span().add_event(name, {k: v for k, v in attributes.items() if v is not None})
    counter = _counters.get(name)
    if counter is None:
        counter = _counters[name] = meter.create_counter(name, description=f"How often {name} happened")
    counter.add(1)


_NO_PROVIDER = (ProxyTracerProvider, NoOpTracerProvider)


_PROVIDER_FROM_ENVIRONMENT = OTEL_PYTHON_TRACER_PROVIDER in os.environ


def tracing() -> bool:
    """Whether spans go anywhere: without a provider the lanes skip the span bookkeeping of every call."""
    if trace._TRACER_PROVIDER is None and not _PROVIDER_FROM_ENVIRONMENT:
        # No provider yet: `get_tracer_provider` would look the environment up (a failed lookup, an exception)
        # on every call only to return its proxy.
        return False
    return not isinstance(trace.get_tracer_provider(), _NO_PROVIDER)


def server_span(
    method: str, name: str, request_id: str | int, version: str, meta: Mapping[str, Any]
) -> AbstractContextManager[Span]:
    """The SERVER span of a request served by a lane: named and attributed as the SDK's own, in the caller's trace."""
    if not tracing():
        if "traceparent" not in meta:
            return nullcontext(INVALID_SPAN)  # every call passes here: no generator when nothing records nor passes on
        return _adopted(meta)
    return _server_span(method, name, request_id, version, meta)


@contextmanager
def _adopted(meta: Mapping[str, Any]) -> Iterator[Span]:
    with tracecontext.adopted(meta):  # passed on to the downstream as the caller sent it
        yield INVALID_SPAN


@contextmanager
def _server_span(
    method: str, name: str, request_id: str | int, version: str, meta: Mapping[str, Any]
) -> Iterator[Span]:
    attributes: dict[str, Any] = {
        "mcp.method.name": method,
        "mcp.protocol.version": version,
        "jsonrpc.request.id": str(request_id),
    }
    if method == "tools/call":
        attributes |= {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
    context = extract_trace_context(meta)
    with _tracer.start_as_current_span(
        f"{method} {name}", kind=SpanKind.SERVER, attributes=attributes, context=context
    ) as span:
        yield span


def operation(
    seconds: float, forward_s: float | None, method: str, name: str | None, server: str | None, error: str | None
) -> None:
    """One request's `mcp.server.operation.duration` (and `mcp.client…` for its forward) to the exporters; `name`
    is the bounded label (`operations.subject`), and the SDK caps the attribute sets past that (cardinality limit)."""
    attributes = {"mcp.method.name": method}
    if name is not None:
        attributes["gen_ai.tool.name" if method == "tools/call" else "gateway.subject"] = name
    if error is not None:
        attributes["error.type"] = error
    _server_duration.record(seconds, attributes)
    if forward_s is not None and server is not None:
        _client_duration.record(forward_s, attributes | {SERVER: server})


def current_trace_id() -> int | None:
    """The current span's trace id when `configure` set up tracing or a caller's context was passed on untraced,
    else None (the page links a call to its trace). Flags, not `tracing()`, which reads the environment."""
    return tracecontext.current_trace_id() if traced or tracecontext.seen else None


def tool_outcome(span: Span, is_error: bool) -> None:
    """Mark a SERVER span whose tool call returned an error result, as the SDK does."""
    if is_error:
        span.set_attribute("error.type", "tool_error")
        span.set_status(StatusCode.ERROR)
