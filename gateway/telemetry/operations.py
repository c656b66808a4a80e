"""Operation durations by OpenTelemetry's semantic conventions for MCP, counted in process and written as
Prometheus text (`GET /metrics`).

`mcp.server.operation.duration` (a client's request, received until answered) and
`mcp.client.operation.duration` (the gateway's request to a downstream, sent until answered) are
histograms in seconds with the conventions' buckets. Counted here rather than by the OpenTelemetry SDK's
histogram on every call: its `record` costs ~13 µs with its attribute sets, this one ~0.5 µs; with an
OTLP exporter configured the SDK histogram is fed too (`gateway.telemetry.metering`).

Every label a caller can influence is bounded (300 unknown names grew the text 58 KB -> 956 KB; one name of a
million characters made every scrape 35 MB): a name the gateway does not know is counted as `_OTHER` (the
conventions' value for an unknown `http.request.method`), a resource's URI is no label (the conventions keep
`mcp.resource.uri` off metrics: a template has endless URIs), a name is cut to `NAME_CHARS`, and past
`MAX_SERIES` label sets a histogram counts new ones in one series per method and error marked
`otel_metric_overflow="true"` (as the OpenTelemetry SDK does past its cardinality limit) and says how many
recordings it folded there (`gateway_metric_series_dropped_total`).
"""

from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass, field

BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
"""The conventions' advised bucket boundaries for MCP operation durations (seconds)."""


OTHER = "_OTHER"
"""The name label of a call whose name the gateway does not know (refused as `UnknownName`)."""
NAME_CHARS = 128
"""The most characters of a name label (an exposed name is at most `namespace.max_name_length`, <= 128)."""
MAX_SERIES = 1000
"""Label sets per histogram (~2.5 KB of text each); past it, `otel_metric_overflow`."""
_UNBOUNDED = frozenset({"resources/read", "resources/subscribe"})
"""Methods whose subject is a URI: no label."""


def subject(method: str, name: str | None, error: str | None) -> str | None:
    """The name label of a request (the tool or prompt, or None), bounded whatever the caller sent."""
    if name is None or method in _UNBOUNDED:
        return None
    return OTHER if error == "UnknownName" else shortened(name)


def shortened(name: str) -> str:
    """`name` in at most `NAME_CHARS` characters (the page's Calls tab shows names so too)."""
    return name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 1] + "…"


@dataclass(slots=True)
class Series:
    """One label set's counts: per bucket (the last: above every boundary), their sum and the total."""

    buckets: list[int] = field(default_factory=lambda: [0] * (len(BUCKETS) + 1))
    total: float = 0.0
    count: int = 0


class Histogram:
    """A duration histogram keyed by a fixed tuple of label values (None: the label is left out)."""

    def __init__(self, name: str, description: str, labels: tuple[str, ...], *, max_series: int = MAX_SERIES) -> None:
        self.name = name
        self.description = description
        self.labels = labels
        """The first (the method) and the last (the error type) are bounded by the gateway; the others by `subject`
        and, past `max_series`, left out of the overflow series."""
        self.max_series = max_series
        self.series: dict[tuple[str | bool | None, ...], Series] = {}
        """By label values; an overflow series' key is (method, None…, error, True)."""
        self.dropped = 0
        """Recordings counted in an overflow series: their own label set was one too many."""

    def record(self, seconds: float, key: tuple[str | None, ...]) -> None:
        series = self.series.get(key)
        if series is None:
            if len(self.series) >= self.max_series:
                self.dropped += 1
                series = self._overflow(key)
            else:
                series = self.series[key] = Series()
        series.buckets[bisect_left(BUCKETS, seconds)] += 1
        series.total += seconds
        series.count += 1

    def _overflow(self, key: tuple[str | None, ...]) -> Series:
        overflow = (key[0], *[None] * (len(key) - 2), key[-1], True)
        series = self.series.get(overflow)
        if series is None:  # one per method and error type: a few dozen at most, past the cap
            series = self.series[overflow] = Series()
        return series

    def prometheus(self) -> Iterator[str]:
        """The histogram in Prometheus text exposition format (name in the OpenTelemetry→Prometheus mapping)."""
        name = self.name.replace(".", "_") + "_seconds"
        yield f"# HELP {name} {self.description}"
        yield f"# TYPE {name} histogram"
        for key, series in sorted(self.series.items(), key=lambda item: [str(v or "") for v in item[0]]):
            pairs = zip(self.labels, key, strict=False)
            labels = [f'{label.replace(".", "_")}="{_escaped(v)}"' for label, v in pairs if isinstance(v, str) and v]
            if len(key) > len(self.labels):
                labels.append('otel_metric_overflow="true"')
            running = 0
            for bound, n in zip([*map(repr, BUCKETS), "+Inf"], series.buckets, strict=True):
                running += n
                le = 'le="' + bound + '"'
                yield f"{name}_bucket{{{','.join([*labels, le])}}} {running}"
            yield f"{name}_sum{{{','.join(labels)}}} {series.total!r}"
            yield f"{name}_count{{{','.join(labels)}}} {series.count}"


def _escaped(value: str) -> str:
    """A label value as the exposition format writes it: backslash, line feed and double quote escaped; a lone
    surrogate (JSON allows one) replaced, so the text always encodes as UTF-8."""
    value = value.encode("utf-8", "replace").decode("utf-8")
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class Operations:
    """The gateway's two MCP duration histograms."""

    def __init__(self) -> None:
        self.server = Histogram(
            "mcp.server.operation.duration",
            "MCP request duration as observed on the gateway from the time it was received until answered.",
            ("mcp.method.name", "gen_ai.tool.name", "error.type"),
        )
        self.client = Histogram(
            "mcp.client.operation.duration",
            "MCP request duration as observed on the gateway from the time it sent it to a server until answered.",
            ("mcp.method.name", "gen_ai.tool.name", "gateway.server", "error.type"),
        )

    def prometheus(self) -> str:
        dropped = "gateway_metric_series_dropped_total"
        lines = [
            *self.server.prometheus(),
            *self.client.prometheus(),
            f"# HELP {dropped} Recordings counted in a histogram's otel_metric_overflow series: over {MAX_SERIES} "
            "label sets.",
            f"# TYPE {dropped} counter",
            *(
                f'{dropped}{{metric="{h.name.replace(".", "_")}_seconds"}} {h.dropped}'
                for h in (self.server, self.client)
            ),
        ]
        return "\n".join(lines) + "\n"
