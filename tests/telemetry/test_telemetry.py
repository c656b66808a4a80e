"""One trace id spans client -> gateway -> downstream; spans carry the gateway's attributes and reach OTLP.

(a) in-process: a test span, an `mcp.Client` on the gateway's server, a kitchen stdio downstream.
(b) out of process: `gateway serve` over stdio exporting to a real OTLP/HTTP receiver started here.
"""

import gzip
import os
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import uvicorn
from mcp import Client
from opentelemetry import trace
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway import telemetry
from gateway.app.gateway import Gateway
from gateway.app.listening import listening
from gateway.config import TelemetryConfig, load_config
from tests.harness import connected, gateway_params, kitchen, text_of, write_config

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="session")
def span_exporter() -> InMemorySpanExporter:
    """Record every span of this process in memory.

    OpenTelemetry lets a process set the global tracer provider only once (later calls are ignored
    with a warning), and the SDK's tracers are proxies that bind to whichever provider is global.
    So this installs one provider for the whole session (or joins one installed earlier) instead of
    one per test; tests clear the exporter and look only at their own trace.
    """
    exporter = InMemorySpanExporter()
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


@pytest.fixture
def spans(span_exporter: InMemorySpanExporter) -> Iterator[InMemorySpanExporter]:
    span_exporter.clear()
    yield span_exporter
    span_exporter.clear()


def hex_trace(span: ReadableSpan) -> str:
    assert span.context is not None
    return format(span.context.trace_id, "032x")


def hex_span(span: ReadableSpan) -> str:
    assert span.context is not None
    return format(span.context.span_id, "016x")


def parent_of(span: ReadableSpan) -> str | None:
    return None if span.parent is None else format(span.parent.span_id, "016x")


async def test_one_trace_spans_the_caller_the_gateway_and_the_downstream(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    events = tmp_path / "events.txt"
    gateway = Gateway(load_config(write_config(tmp_path, {"k": kitchen("k", events=events)})))
    async with connected(gateway) as (_, client):
        with trace.get_tracer("tests").start_as_current_span("user-request") as root:
            result = await client.call_tool("k.echo", {"text": "traced"})
    assert not result.is_error
    trace_id = format(root.get_span_context().trace_id, "032x")
    mine = [s for s in spans.get_finished_spans() if hex_trace(s) == trace_id]

    [front] = [s for s in mine if s.kind is SpanKind.SERVER and s.name == "tools/call k.echo"]
    attributes = dict(front.attributes or {})
    assert attributes[telemetry.SERVER] == "k"
    assert attributes[telemetry.TOOL] == "echo"
    [upstream] = [s for s in mine if s.kind is SpanKind.CLIENT and s.name == "MCP send tools/call k.echo"]
    [downstream] = [s for s in mine if s.kind is SpanKind.CLIENT and s.name == "MCP send tools/call echo"]
    # user-request -> client's request -> gateway's SERVER span -> gateway's request to the downstream
    assert parent_of(upstream) == format(root.get_span_context().span_id, "016x")
    assert parent_of(front) == hex_span(upstream)
    assert parent_of(downstream) == hex_span(front)

    # The downstream process received the gateway's CLIENT span as its parent, in the same trace.
    received = [line.split()[1] for line in events.read_text().splitlines() if line.startswith("traceparent ")]
    assert len(received) == 1
    version, their_trace, their_parent, _flags = received[0].split("-")
    assert (version, their_trace, their_parent) == ("00", trace_id, hex_span(downstream))


async def test_a_call_to_an_unknown_tool_has_no_server_attribute(tmp_path: Path, spans: InMemorySpanExporter) -> None:
    gateway = Gateway(load_config(write_config(tmp_path, {})))
    async with connected(gateway) as (_, client):
        with trace.get_tracer("tests").start_as_current_span("user-request") as root:
            result = await client.call_tool("nope.echo", {})
    assert result.is_error
    trace_id = root.get_span_context().trace_id
    [front] = [
        s
        for s in spans.get_finished_spans()
        if s.kind is SpanKind.SERVER and s.context is not None and s.context.trace_id == trace_id
    ]
    assert telemetry.SERVER not in (front.attributes or {})


# -- (b) a real OTLP/HTTP receiver and the gateway as a subprocess ------------------------------------


class OtlpReceiver:
    """POST /v1/traces: decodes each ExportTraceServiceRequest and keeps its spans' names and attributes."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, dict[str, Any]]] = []
        self.services: set[str] = set()
        self.received = anyio.Event()
        self.metrics: set[str] = set()
        self.metrics_received = anyio.Event()
        self.app = Starlette(
            routes=[
                Route("/v1/traces", self.traces, methods=["POST"]),
                Route("/v1/metrics", self.metric_export, methods=["POST"]),
            ]
        )

    async def metric_export(self, request: Request) -> Response:
        body = await request.body()
        if request.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        export = ExportMetricsServiceRequest()
        export.ParseFromString(body)
        for resource_metrics in export.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                self.metrics.update(m.name for m in scope_metrics.metrics)
        self.metrics_received.set()
        return Response(ExportMetricsServiceResponse().SerializeToString(), media_type="application/x-protobuf")

    async def traces(self, request: Request) -> Response:
        body = await request.body()
        if request.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        export = ExportTraceServiceRequest()
        export.ParseFromString(body)
        for resource_spans in export.resource_spans:
            resource = {kv.key: _value(kv.value) for kv in resource_spans.resource.attributes}
            self.services.add(resource.get("service.name", ""))
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    attributes = {kv.key: _value(kv.value) for kv in span.attributes}
                    self.spans.append((span.name, attributes))
        self.received.set()
        return Response(ExportTraceServiceResponse().SerializeToString(), media_type="application/x-protobuf")


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    return None if kind is None else getattr(value, kind)


@pytest.fixture
async def otlp() -> AsyncIterator[tuple[OtlpReceiver, int]]:
    receiver = OtlpReceiver()
    # Listening before uvicorn starts: the kernel queues connections, so the gateway can send at once.
    with listening("127.0.0.1", 0) as sockets:
        port: int = sockets[0].getsockname()[1]
        config = uvicorn.Config(receiver.app, log_config=None, access_log=False, lifespan="off")
        server = uvicorn.Server(config)
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, sockets)
            try:
                yield receiver, port
            finally:
                server.should_exit = True


async def test_gateway_process_exports_its_spans_over_otlp_and_flushes_on_shutdown(
    tmp_path: Path, otlp: tuple[OtlpReceiver, int]
) -> None:
    receiver, port = otlp
    config = write_config(tmp_path, {"k": kitchen("k")})
    env = {
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://127.0.0.1:{port}/v1/traces",
        "OTEL_SERVICE_NAME": "gateway-under-test",
        # Longer than the test: spans can only arrive through the flush when the gateway shuts down.
        "OTEL_BSP_SCHEDULE_DELAY": "600000",
    }
    with anyio.fail_after(30):
        async with Client(gateway_params(config, env=env), mode="legacy") as client:
            result = await client.call_tool("k.echo", {"text": "exported"})
            assert not result.is_error
            assert not receiver.received.is_set()
        # Leaving the client closed the gateway's stdin; it flushes its spans while shutting down.
        await receiver.received.wait()
    calls = [attributes for name, attributes in receiver.spans if name == "tools/call k.echo"]
    assert len(calls) == 1
    assert calls[0][telemetry.SERVER] == "k" and calls[0][telemetry.TOOL] == "echo"
    assert any(name == "MCP send tools/call echo" for name, _ in receiver.spans)
    assert receiver.services == {"gateway-under-test"}


async def test_metrics_go_to_the_configured_endpoint_and_a_sigterm_flushes_the_last_batch(
    tmp_path: Path, otlp: tuple[OtlpReceiver, int]
) -> None:
    receiver, port = otlp
    telemetry_section = {"exporter": "otlp", "endpoint": f"http://127.0.0.1:{port}/v1/traces"}
    config = write_config(tmp_path, {"k": kitchen("k")}, telemetry=telemetry_section)
    # Longer than the test: the counters can only arrive through the flush at shutdown. No OTLP variables:
    # the metrics must follow telemetry.endpoint, not the exporter's default (localhost:4318).
    env = {"OTEL_METRIC_EXPORT_INTERVAL": "600000", "OTEL_BSP_SCHEDULE_DELAY": "600000"}
    with anyio.fail_after(30):
        async with Client(gateway_params(config, env=env), mode="legacy") as client:
            kitchen_pid = int(text_of(await client.call_tool("k.pid", {})))  # the first result: bootstrap counted
            assert not receiver.metrics_received.is_set()
            os.kill(_parent_of(kitchen_pid), signal.SIGTERM)
            await receiver.metrics_received.wait()
    assert "gateway.bootstrap" in receiver.metrics
    assert {"mcp.server.operation.duration", "mcp.client.operation.duration"} <= receiver.metrics


def _parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
        stat = f.read()
    return int(stat[stat.rfind(")") + 2 :].split()[1])


def test_the_metrics_endpoint_sits_beside_the_traces_endpoint() -> None:
    assert telemetry.metrics_endpoint("http://c:4318/v1/traces") == "http://c:4318/v1/metrics"
    assert telemetry.metrics_endpoint("http://c:4318/") == "http://c:4318/v1/metrics"
    assert telemetry.metrics_endpoint(None) is None


@pytest.mark.parametrize(
    "env",
    [{}, {"OTEL_TRACES_EXPORTER": "none"}, {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}],
    ids=["unset", "none", "sdk-disabled"],
)
def test_tracing_is_off_unless_an_exporter_is_chosen(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for name in ("OTEL_TRACES_EXPORTER", "OTEL_SDK_DISABLED"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert telemetry.configure(TelemetryConfig()) is None
