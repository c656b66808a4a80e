"""`bench.peers`' tables: medians over the repetitions, ratios to direct and to the best peer, the issue's goals."""

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

from bench._harness import MB, Blob, table


@dataclass
class Sample:
    """One side of one row in one repetition."""

    version: str
    p50_ms: float
    p99_ms: float
    rate: float
    """Calls per second with `concurrency` callers on one session."""
    cpu_seq_ms: float | None
    """CPU of the side's server process per call, sequential calls (ms)."""
    cpu_c16_ms: float | None
    """The same under concurrent calls (ms)."""


Rep = dict[str, Sample]
"""side name → sample, for one row and era in one repetition."""


@dataclass
class Results:
    echo: dict[tuple[str, str], list[Rep]] = field(default_factory=dict[tuple[str, str], list[Rep]])
    """(row, era) → one `Rep` per repetition."""
    blobs: dict[tuple[str, int], dict[str, Blob]] = field(default_factory=dict[tuple[str, int], dict[str, Blob]])
    """(row, MB) → side → the call."""
    notes: list[str] = field(default_factory=list[str])


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _ratio(reps: list[Rep], side: str, other: str, pick: Callable[[Sample], float | None]) -> float | None:
    """Median over repetitions of side/other, each ratio taken within one interleaved repetition."""
    ratios = []
    for rep in reps:
        if side in rep and other in rep:
            a, b = pick(rep[side]), pick(rep[other])
            if a is not None and b:
                ratios.append(a / b)
    return _median(ratios)


def _fmt(value: float | None, spec: str, unit: str = "") -> str:
    return "—" if value is None else f"{value:{spec}}{unit}"


def _p50(s: Sample) -> float:
    return s.p50_ms


def _rate(s: Sample) -> float:
    return s.rate


def echo_table(results: Results) -> None:
    header = ["row", "era", "side", "spoke", "p50", "/direct", "p99", "calls/s", "/direct", "CPU/call C16", "seq"]
    rows = []
    for (row, era), reps in results.echo.items():
        sides = list(dict.fromkeys(name for rep in reps for name in rep))
        for side in sides:
            samples = [rep[side] for rep in reps if side in rep]
            spoke = "/".join(sorted({s.version for s in samples}))
            rows.append(
                [
                    row,
                    era,
                    side,
                    "" if spoke == era else spoke,
                    _fmt(_median([s.p50_ms for s in samples]), ".2f", " ms"),
                    _fmt(_ratio(reps, side, "direct", _p50), ".2f", "×"),
                    _fmt(_median([s.p99_ms for s in samples]), ".2f", " ms"),
                    _fmt(_median([s.rate for s in samples]), ".0f"),
                    _fmt(_ratio(reps, side, "direct", _rate), ".2f", "×"),
                    _fmt(_median([s.cpu_c16_ms for s in samples if s.cpu_c16_ms is not None]), ".2f", " ms"),
                    _fmt(_median([s.cpu_seq_ms for s in samples if s.cpu_seq_ms is not None]), ".2f", " ms"),
                ]
            )
    table(header, rows, right=set(range(4, len(header))))


def blob_table(results: Results) -> None:
    header = ["row", "result", "side", "wall", "/direct", "extra RSS", "× payload", "received"]
    rows = []
    for (row, size), sides in results.blobs.items():
        direct = sides.get("direct")
        for side, blob in sides.items():
            ratio = None
            if blob.wall_s is not None and direct is not None and direct.wall_s:
                ratio = blob.wall_s / direct.wall_s
            extra = None if blob.extra_rss is None else blob.extra_rss / MB
            rows.append(
                [
                    row,
                    f"{size} MB",
                    side,
                    _fmt(blob.wall_s, ".2f", " s"),
                    _fmt(ratio, ".2f", "×"),
                    _fmt(extra, ".0f", " MB"),
                    _fmt(None if extra is None else extra / size, ".2f", "×"),
                    "ERROR" if blob.error else f"{blob.received:,}",
                ]
            )
            if blob.error:
                results.notes.append(f"{row} {size} MB {side}: {blob.error}")
    table(header, rows, right={3, 4, 5, 6, 7})


@dataclass
class Goal:
    what: str
    figure: str
    ok: bool | None


def _goal_ratio(what: str, value: float | None, limit: float, *, at_most: bool) -> Goal:
    if value is None:
        return Goal(what, "not measured", None)
    ok = value <= limit if at_most else value >= limit
    return Goal(what, f"{value:.2f}× ({'≤' if at_most else '≥'} {limit:g}×)", ok)


def goals(results: Results) -> list[Goal]:
    """The issue's goals, each a ratio within interleaved repetitions (medians over repetitions)."""
    out: list[Goal] = []
    for (row, era), reps in results.echo.items():
        label = f"{row} {era}"
        peers = sorted({name for rep in reps for name in rep} - {"direct", "gateway", "floor"})
        # Not a goal: the relay that only copies shows what the extra hop alone costs on this machine.
        floor = _ratio(reps, "floor", "direct", _p50)
        if floor is not None:
            out.append(Goal(f"{label}: p50 of the copying floor / direct", f"{floor:.2f}×", None))
        if row == "HTTP→stdio" and era == "2025-11-25":
            out.append(
                _goal_ratio(f"{label}: p50 / mcp-proxy", _ratio(reps, "gateway", "mcp-proxy", _p50), 0.9, at_most=True)
            )
            out.append(
                _goal_ratio(
                    f"{label}: calls/s / mcp-proxy", _ratio(reps, "gateway", "mcp-proxy", _rate), 1.2, at_most=False
                )
            )
        elif row == "HTTP→stdio" or row == "stdio→stdio":
            p50_limit, rate_limit = (1.3, 0.8) if row == "HTTP→stdio" else (1.3, 0.85)
            out.append(
                _goal_ratio(f"{label}: p50 / direct", _ratio(reps, "gateway", "direct", _p50), p50_limit, at_most=True)
            )
            out.append(
                _goal_ratio(
                    f"{label}: calls/s / direct", _ratio(reps, "gateway", "direct", _rate), rate_limit, at_most=False
                )
            )
        for peer in peers:
            if row == "HTTP→stdio" and era == "2025-11-25" and peer == "mcp-proxy":
                continue  # its own, stricter goal above
            out.append(_goal_ratio(f"{label}: p50 / {peer}", _ratio(reps, "gateway", peer, _p50), 1.0, at_most=True))
            out.append(
                _goal_ratio(f"{label}: calls/s / {peer}", _ratio(reps, "gateway", peer, _rate), 1.0, at_most=False)
            )
    for (row, size), sides in results.blobs.items():
        gateway, direct, proxy = sides.get("gateway"), sides.get("direct"), sides.get("mcp-proxy")
        label = f"{row} {size} MB"
        if gateway is None or gateway.wall_s is None:
            out.append(Goal(f"{label}: gateway", "failed or not measured", False))
            continue
        if row == "stdio→stdio" and direct is not None and direct.wall_s:
            out.append(_goal_ratio(f"{label}: wall / direct", gateway.wall_s / direct.wall_s, 1.1, at_most=True))
        if row == "HTTP→stdio" and proxy is not None and proxy.wall_s:
            out.append(
                _goal_ratio(f"{label}: mcp-proxy wall / gateway", proxy.wall_s / gateway.wall_s, 10, at_most=False)
            )
        if gateway.extra_rss is not None:
            out.append(
                _goal_ratio(f"{label}: gateway extra RSS / payload", gateway.extra_rss / (size * MB), 3, at_most=True)
            )
    return out


def print_goals(results: Results) -> int:
    """Print the goals; the number missed."""
    rows = [[g.what, g.figure, "—" if g.ok is None else ("PASS" if g.ok else "MISS")] for g in goals(results)]
    table(["goal", "measured", ""], rows, right=set())
    return sum(1 for r in rows if r[2] == "MISS")
