"""A caller's trace context made current untraced (so the SDK's outbound request passes it on), and only a valid
`traceparent` at that: a malformed one or none leaves no context, and costs the recorder nothing."""

from opentelemetry import trace

from gateway.telemetry import tracecontext

PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def test_a_valid_traceparent_is_current_inside_and_gone_after() -> None:
    with tracecontext.adopted({"traceparent": PARENT, "tracestate": "v=1"}):
        context = trace.get_current_span().get_span_context()
        assert format(context.trace_id, "032x") == "0af7651916cd43dd8448eb211c80319c"
        assert format(context.span_id, "016x") == "b7ad6b7169203331" and context.trace_state.get("v") == "1"
        assert tracecontext.current_trace_id() == context.trace_id
    assert tracecontext.seen and tracecontext.current_trace_id() is None


def test_no_or_a_malformed_traceparent_adopts_nothing() -> None:
    for meta in ({}, {"progressToken": 1}, {"traceparent": "00-zz-yy-01"}, {"traceparent": 42}):
        with tracecontext.adopted(meta):
            assert tracecontext.current_trace_id() is None, meta
