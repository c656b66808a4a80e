"""The MCP operation histograms stay bounded whatever names callers send (unknown names share `_OTHER`, names are
cut, a resource's URI is no label, past the series cap an overflow series and a count of what went there), and
their Prometheus text is escaped as the exposition format says."""

import uuid

from gateway.telemetry.operations import NAME_CHARS, OTHER, Histogram, Operations, subject


def test_unknown_names_share_one_label_so_the_text_does_not_grow_with_them() -> None:
    operations = Operations()
    operations.server.record(0.01, ("tools/call", subject("tools/call", "k.echo", None), None))
    before = len(operations.prometheus())
    for _ in range(300):
        name = f"k.nosuch_{uuid.uuid4()}"
        operations.server.record(0.01, ("tools/call", subject("tools/call", name, "UnknownName"), "UnknownName"))
    text = operations.prometheus()
    assert len(text) < before + 3000  # one series more, not 300 (58 KB -> 956 KB before)
    assert 'gen_ai_tool_name="_OTHER",error_type="UnknownName",le="+Inf"} 300' in text
    assert "nosuch" not in text


def test_a_name_is_cut_and_a_uri_is_no_label() -> None:
    huge = "k." + "y" * 1_000_000
    label = subject("prompts/get", huge, None)
    assert label is not None and len(label) == NAME_CHARS and label.endswith("…")
    assert subject("tools/call", huge, "UnknownName") == OTHER
    assert subject("resources/read", f"k://items/{uuid.uuid4()}", None) is None
    assert subject("tools/call", "k.echo", "PolicyDenied") == "k.echo"  # a known name refused keeps its own


def test_past_the_series_cap_new_label_sets_go_to_one_overflow_series_per_method_and_error() -> None:
    histogram = Histogram("mcp.server.operation.duration", "d", ("mcp.method.name", "gen_ai.tool.name", "error.type"))
    histogram.max_series = 3
    for i in range(3):
        histogram.record(0.01, ("tools/call", f"k.t{i}", None))
    for i in range(3, 50):
        histogram.record(0.01, ("tools/call", f"k.t{i}", None))
        histogram.record(0.01, ("tools/call", f"k.t{i}", "DownstreamFailed"))
    histogram.record(0.01, ("tools/call", "k.t0", None))  # a label set it has: counted as its own still
    assert len(histogram.series) == 5 and histogram.dropped == 94
    text = "\n".join(histogram.prometheus())
    name = "mcp_server_operation_duration_seconds"
    assert f'{name}_count{{mcp_method_name="tools/call",otel_metric_overflow="true"}} 47' in text
    assert (
        f'{name}_count{{mcp_method_name="tools/call",error_type="DownstreamFailed",otel_metric_overflow="true"}} 47'
        in text
    )
    assert f'{name}_count{{mcp_method_name="tools/call",gen_ai_tool_name="k.t0"}} 2' in text


def test_the_dropped_counter_is_always_written_for_both_histograms() -> None:
    operations = Operations()
    text = operations.prometheus()
    assert "# TYPE gateway_metric_series_dropped_total counter" in text
    assert 'gateway_metric_series_dropped_total{metric="mcp_server_operation_duration_seconds"} 0' in text
    assert 'gateway_metric_series_dropped_total{metric="mcp_client_operation_duration_seconds"} 0' in text


def test_label_values_are_escaped_as_the_exposition_format_says() -> None:
    operations = Operations()
    operations.server.record(0.01, ("prompts/get", 'k.a"b\\c\nd<script>\ud800', None))
    text = operations.prometheus()
    assert 'gen_ai_tool_name="k.a\\"b\\\\c\\nd<script>?"' in text  # markup is data here: /metrics is text/plain
    text.encode("utf-8")  # a lone surrogate would make every scrape fail
