"""The gateway beside its peers: direct, gateway, mcp-proxy and FastMCP, every front → downstream row, both eras.

Usage, from the repository root: `.venv/bin/python -m bench.peers [--reps 3] [--calls 200]
[--throughput-calls 800] [--concurrency 16] [--rows stdio→stdio,HTTP→stdio,stdio→HTTP]
[--eras 2025-11-25,2026-07-28] [--blobs 50,100] [--quick]`.

One driver (the mcp 2.3.0 `Client`) and one downstream (the kitchen test server, mcp 2.3.0). For each
row and era, every side is started and connected, then measured interleaved: sequential `echo` calls
rotate over the sides call by call (p50, p99), then rounds of `--throughput-calls` calls from
`--concurrency` callers alternate side by side (calls/s); the CPU each side's server process spends per
call is read from the kernel for both phases. The whole sweep repeats `--reps` times, and the tables
show medians (ratios are taken within each repetition, then their median). Large `blob` results are
measured once per row in the 2025-11-25 era, with the proxies' peak extra RSS.

mcp-proxy and FastMCP are installed on first use into `.bench-envs/` (see `bench._peer_envs`). A peer
that does not speak the 2026-07-28 era falls back to 2025-11-25 in that row: the "spoke" column says so.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

import anyio

from bench._harness import (
    MB,
    blob_call,
    cpu_seconds,
    echo_once,
    kill_leftover_children,
    percentile,
    throughput,
)
from bench._peer_envs import FASTMCP, MCP_PROXY
from bench._peer_report import Rep, Results, Sample, blob_table, echo_table, print_goals
from bench._peer_sides import ERAS, ROWS, RowPlace, Side, open_side
from bench._processes import TIMEOUT_S, http_kitchen
from tests.harness import ROOT

ROUNDS = 4
BLOB_ROWS = ("stdio→stdio", "HTTP→stdio")


@dataclass
class Options:
    reps: int
    calls: int
    warmup: int
    throughput_calls: int
    concurrency: int
    rows: list[str]
    eras: list[str]
    blobs: list[int]
    blob_timeout_s: float


async def _named(side: Side, work: Awaitable[float]) -> float:
    """`work`'s result; a failure carries the side it happened on (a row runs several servers)."""
    try:
        return await work
    except Exception as exc:
        exc.add_note(f"on the {side.name} side")
        raise


async def measure(sides: list[Side], opts: Options) -> Rep:
    """Latency (calls rotated over the sides), then throughput (rounds alternating), with CPU per call."""
    for side in sides:
        for _ in range(opts.warmup):
            await echo_once(side.client, side.tool)
    latencies: dict[str, list[float]] = {side.name: [] for side in sides}
    cpu_start = {side.name: cpu_seconds(side.proc) for side in sides}
    for i in range(opts.calls):
        for side in sides[i % len(sides) :] + sides[: i % len(sides)]:
            latencies[side.name].append(await _named(side, echo_once(side.client, side.tool)))
    cpu_seq = {side.name: cpu_seconds(side.proc) - cpu_start[side.name] for side in sides}
    per_round = max(opts.concurrency, opts.throughput_calls // ROUNDS)
    wall = dict.fromkeys(latencies, 0.0)
    cpu_c16 = dict.fromkeys(latencies, 0.0)
    for n in range(ROUNDS):
        for side in sides[n % len(sides) :] + sides[: n % len(sides)]:
            before = cpu_seconds(side.proc)
            wall[side.name] += await _named(side, throughput(side.client, side.tool, per_round, opts.concurrency))
            cpu_c16[side.name] += cpu_seconds(side.proc) - before
    rep: Rep = {}
    for side in sides:
        values = latencies[side.name]
        metered = side.proc is not None
        rep[side.name] = Sample(
            version=side.version,
            p50_ms=statistics.median(values) * 1e3,
            p99_ms=(percentile(values, 0.99) or 0.0) * 1e3,
            rate=per_round * ROUNDS / wall[side.name],
            cpu_seq_ms=cpu_seq[side.name] / len(values) * 1e3 if metered else None,
            cpu_c16_ms=cpu_c16[side.name] / (per_round * ROUNDS) * 1e3 if metered else None,
        )
    return rep


async def open_row(row: str, place: RowPlace, stack: AsyncExitStack) -> tuple[str, str]:
    """(front, downstream) of `row`; an HTTP downstream's kitchen is started once for all its sides."""
    front, down = (part.lower() for part in row.split("→"))
    if down == "http":
        place.kitchen_url = await stack.enter_async_context(http_kitchen(place.tmp, "shared"))
    return front, down


async def echo_row(row: str, era: str, label: str, tmp: Path, opts: Options) -> Rep:
    async with AsyncExitStack() as stack:
        place = RowPlace(tmp / label)
        place.tmp.mkdir(parents=True)
        front, _ = await open_row(row, place, stack)
        sides = [await open_side(kind, front, era, place, stack, label=f"{label}-{kind}") for kind in ROWS[row]]
        return await measure(sides, opts)


async def blob_row(row: str, tmp: Path, opts: Options, results: Results) -> None:
    """Each size once per side, sides interleaved size by size, in the 2025-11-25 era."""
    async with AsyncExitStack() as stack:
        place = RowPlace(tmp / f"blobs-{row.replace('→', '-')}")
        place.tmp.mkdir(parents=True)
        front, _ = await open_row(row, place, stack)
        sides = [
            await open_side(kind, front, "2025-11-25", place, stack, label=f"blob-{kind}", big=True)
            for kind in ROWS[row]
        ]
        for side in sides:
            await side.client.call_tool(side.tool.replace("echo", "blob"), {"n": 1000})
        for size in opts.blobs:
            for side in sides:
                print(f"  {row} {size} MB {side.name}", flush=True)
                proc = None if side.name == "direct" else side.proc
                blob = await blob_call(
                    side.client, side.tool.replace("echo", "blob"), size * MB, proc, opts.blob_timeout_s
                )
                results.blobs.setdefault((row, size), {})[side.name] = blob


async def run(opts: Options) -> Results:
    results = Results()
    with tempfile.TemporaryDirectory(prefix="peers-") as name:
        tmp = Path(name)
        try:
            for rep in range(opts.reps):
                for row in opts.rows:
                    for era in opts.eras:
                        label = f"r{rep}-{row.replace('→', '-')}-{era}"
                        print(f"[rep {rep + 1}/{opts.reps}] {row} {era}", flush=True)
                        try:
                            results.echo.setdefault((row, era), []).append(await echo_row(row, era, label, tmp, opts))
                        except Exception as exc:  # noqa: BLE001 -- report it, still run the other rows
                            where = "; ".join(getattr(exc, "__notes__", ()))
                            results.notes.append(f"{label} FAILED: {type(exc).__name__}: {exc} ({where or 'opening'})")
                            print(f"  FAILED: {exc!r} ({where or 'opening'})", flush=True)
            for row in (r for r in opts.rows if r in BLOB_ROWS and opts.blobs):
                print(f"[blobs] {row} {opts.blobs} MB", flush=True)
                try:
                    await blob_row(row, tmp, opts, results)
                except Exception as exc:  # noqa: BLE001 -- report it, still print what was measured
                    results.notes.append(f"blobs {row} FAILED: {type(exc).__name__}: {exc}")
                    print(f"  FAILED: {exc!r}", flush=True)
        finally:
            if (leaked := kill_leftover_children()) is not None:
                results.notes.append(leaked)
    return results


def parse_args(argv: list[str] | None) -> Options:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 repetition, few calls, no blobs")
    parser.add_argument("--reps", type=int, default=3, help="repetitions of the whole sweep (medians)")
    parser.add_argument("--calls", type=int, default=200, help="sequential echo calls per side (latency)")
    parser.add_argument("--warmup", type=int, default=20, help="warm-up calls per side")
    parser.add_argument("--throughput-calls", type=int, default=800, help="calls per side for throughput")
    parser.add_argument("--concurrency", type=int, default=16, help="concurrent callers for throughput")
    parser.add_argument("--rows", default=",".join(ROWS), help="comma-separated rows")
    parser.add_argument("--eras", default=",".join(ERAS), help="comma-separated protocol eras")
    parser.add_argument("--blobs", default="50,100", help="blob sizes in MB ('' skips)")
    parser.add_argument("--blob-timeout", type=float, default=TIMEOUT_S, help="seconds one blob call may take")
    args = parser.parse_args(argv)
    quick: bool = args.quick
    rows = [r.strip() for r in str(args.rows).split(",") if r.strip()]
    eras = [e.strip() for e in str(args.eras).split(",") if e.strip()]
    for value, known in ((rows, ROWS), (eras, ERAS)):
        unknown = [v for v in value if v not in known]
        if unknown:
            parser.error(f"unknown {unknown}; choose from {', '.join(known)}")
    return Options(
        reps=1 if quick else max(1, args.reps),
        calls=40 if quick else args.calls,
        warmup=5 if quick else args.warmup,
        throughput_calls=160 if quick else args.throughput_calls,
        concurrency=args.concurrency,
        rows=rows,
        eras=eras,
        blobs=[] if quick else [int(s) for s in str(args.blobs).split(",") if s.strip()],
        blob_timeout_s=args.blob_timeout,
    )


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    if Path.cwd().resolve() != ROOT:
        os.chdir(ROOT)
    for env in (MCP_PROXY, FASTMCP):
        env.ensure()
    load = os.getloadavg()
    print(
        f"peers: python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {load[0]:.1f}, {opts.reps} reps × "
        f"{opts.calls} calls (+{opts.warmup} warm-up) and {opts.throughput_calls} calls × {opts.concurrency} "
        f"callers per side, blobs {opts.blobs} MB",
        flush=True,
    )
    started = time.perf_counter()
    results = anyio.run(run, opts)
    print(f"\ndone in {time.perf_counter() - started:.0f} s, load {os.getloadavg()[0]:.1f}\n")
    echo_table(results)
    if results.blobs:
        print()
        blob_table(results)
    print()
    missed = print_goals(results)
    for note in results.notes:
        print(f"* {note}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
