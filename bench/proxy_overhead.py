"""Proxy overhead: the kitchen test server called directly vs through the gateway, with PASS/MISS targets.

Usage, from the repository root: `.venv/bin/python -m bench.proxy_overhead [--quick] [--sizes 10,50,100]
[--calls 300] [--concurrency 16] [--throughput-calls 800] [--list-iterations 30] [--blob-repeats 1]`.
It measures, in one run, stdio→stdio (client → kitchen over stdio, vs client → gateway over stdio →
kitchen over stdio) and http→stdio (client → kitchen's Streamable HTTP, vs client → `gateway serve --http`
→ kitchen over stdio): `echo` latency p50/p99 and throughput with concurrent callers on one session,
`tools/list` of 10 servers with 60 tools each, and `blob` results of 10-100 MB with the gateway's
peak RSS. `--quick` is a smoke run (few calls, 10 MB only). Every process it starts is stopped before it exits.
The gateways run with 1 GiB size-guard limits, so results are passed through, not spilled (raw proxying).
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import psutil
from mcp import Client, StdioServerParameters

from bench._harness import MB, Blob, blob_call, echo_once, kill_leftover_children, percentile, throughput
from bench._overhead_list import list_section
from bench._overhead_report import Report, Row
from bench._processes import (
    TIMEOUT_S,
    find_gateway,
    gateway_config,
    gateway_stdio,
    http_kitchen,
    kitchen_stdio,
    linear,
)
from tests.harness import KITCHEN, PYTHON, ROOT, gateway_params, http_client, http_gateway, kitchen

# -- measurements --------------------------------------------------------------------------------


async def blobs(
    client: Client, tool: str, sizes: list[int], repeats: int, proc: psutil.Process | None, out: list[Blob]
) -> None:
    """Append one `Blob` per size to `out`: the median wall time and the largest extra RSS over `repeats` calls."""
    await client.call_tool(tool, {"n": 1000})  # warm-up: first call, tools/list for output schemas
    for size in sizes:
        runs = [await blob_call(client, tool, size * MB, proc, TIMEOUT_S) for _ in range(repeats)]
        failed = next((b for b in runs if b.error is not None), None)
        if failed is not None:
            out.append(failed)
            continue
        walls = [b.wall_s for b in runs if b.wall_s is not None]
        extras = [b.extra_rss for b in runs if b.extra_rss is not None]
        out.append(Blob(statistics.median(walls), runs[0].received, max(extras) if extras else None))


# -- the scenarios -------------------------------------------------------------------------------


@dataclass
class Options:
    calls: int
    warmup: int
    throughput_calls: int
    concurrency: int
    sizes: list[int]
    list_iterations: int
    blob_repeats: int


@dataclass
class Side:
    latencies: list[float] = field(default_factory=list[float])
    calls_per_s: float | None = None
    blobs: list[Blob] = field(default_factory=list[Blob])


@dataclass
class Peer:
    """One side of a comparison: a connected client, the echo tool's name there, and its measurements."""

    client: Client
    tool: str
    side: Side


ROUNDS = 4


async def echo_pair(direct: Peer, gateway: Peer, opts: Options) -> None:
    """Latency and throughput of both sides, interleaved so that the machine's noise falls on both alike:
    latency alternates call by call; throughput alternates rounds, and each side's rate is its calls over
    its summed round time."""
    for peer in (direct, gateway):
        for _ in range(opts.warmup):
            await echo_once(peer.client, peer.tool)
    for _ in range(opts.calls):
        for peer in (direct, gateway):
            peer.side.latencies.append(await echo_once(peer.client, peer.tool))
    per_round = max(opts.concurrency, opts.throughput_calls // ROUNDS)
    spent = [0.0, 0.0]
    for _ in range(ROUNDS):
        for i, peer in enumerate((direct, gateway)):
            spent[i] += await throughput(peer.client, peer.tool, per_round, opts.concurrency)
    for peer, seconds in zip((direct, gateway), spent, strict=True):
        peer.side.calls_per_s = per_round * ROUNDS / seconds


async def step(report: Report, label: str, fn: Callable[[], Awaitable[None]]) -> None:
    """Run one measurement; a failure becomes a note (and ERROR cells) instead of ending the run."""
    print(f"[{label}]", flush=True)
    try:
        await fn()
    except Exception as exc:  # noqa: BLE001 -- report the failure, still run the other measurements
        report.notes.append(f"{label} FAILED: {type(exc).__name__}: {exc}")
        print(f"  FAILED: {exc!r}", flush=True)


def ms(values: list[float], q: float) -> float | None:
    p = percentile(values, q)
    return None if p is None else p * 1e3


def report_pair(
    report: Report, section: str, direct: Side, gateway: Side, opts: Options, targets: dict[str, float]
) -> None:
    report.compare(
        section, "echo p50", ms(direct.latencies, 0.5), ms(gateway.latencies, 0.5), "ms", at_most=targets["p50"]
    )
    report.compare(
        section, "echo p99", ms(direct.latencies, 0.99), ms(gateway.latencies, 0.99), "ms", at_most=targets["p99"]
    )
    report.compare(
        section,
        f"throughput ×{opts.concurrency}",
        direct.calls_per_s,
        gateway.calls_per_s,
        "/s",
        at_least=targets["throughput"],
        fmt="{:.0f}",
    )
    missing = Blob(None, None, None, "not measured")
    direct_blobs = direct.blobs + [missing] * (len(opts.sizes) - len(direct.blobs))
    gateway_blobs = gateway.blobs + [missing] * (len(opts.sizes) - len(gateway.blobs))
    for size, d, g in zip(opts.sizes, direct_blobs, gateway_blobs, strict=True):
        report.compare(section, f"blob {size} MB wall", d.wall_s, g.wall_s, "s", at_most=2.0 if size == 50 else None)
        extra = None if g.extra_rss is None else g.extra_rss / MB
        report.compare(section, f"blob {size} MB gw extra RSS", float(size), extra, "MB", at_most=3.0, fmt="{:.0f}")
        report.rows[-1].direct = f"{size} MB payload"
        got = f"direct {fmt_received(d)}, gateway {fmt_received(g)}"
        report.rows.append(Row(section, f"blob {size} MB received", "", "", None, f"{got} chars", _both_ok(d, g)))
        for who, b in (("direct", d), ("gateway", g)):
            if b.error is not None:
                report.notes.append(f"{section} blob {size} MB {who}: {b.error}")


def fmt_received(b: Blob) -> str:
    return "ERROR" if b.received is None else f"{b.received:,}"


def _both_ok(d: Blob, g: Blob) -> bool:
    return d.error is None and g.error is None


async def stdio_pair(tmp: Path, opts: Options, report: Report) -> None:
    section = "stdio→stdio"
    direct, gateway = Side(), Side()

    async def echo() -> None:
        params = StdioServerParameters(command=PYTHON, args=[KITCHEN, "--name", "k"])
        config = gateway_config(tmp / "stdio-echo", {"k": kitchen("k", timeout_s=TIMEOUT_S)})
        async with (
            Client(params, read_timeout_seconds=TIMEOUT_S) as direct_client,
            Client(gateway_params(config), read_timeout_seconds=TIMEOUT_S) as gateway_client,
        ):
            await echo_pair(Peer(direct_client, "echo", direct), Peer(gateway_client, "k.echo", gateway), opts)

    async def direct_blobs() -> None:
        async with Client(linear(kitchen_stdio("k")), read_timeout_seconds=TIMEOUT_S) as client:
            await blobs(client, "blob", opts.sizes, opts.blob_repeats, None, direct.blobs)

    async def gateway_blobs() -> None:
        config = gateway_config(tmp / "stdio-blob", {"k": kitchen("k", timeout_s=TIMEOUT_S)})
        async with Client(linear(gateway_stdio(config)), read_timeout_seconds=TIMEOUT_S) as client:
            await blobs(client, "k.blob", opts.sizes, opts.blob_repeats, find_gateway(config), gateway.blobs)

    await step(report, f"{section} echo, direct (SDK stdio client → kitchen) and gateway (→ gateway → kitchen)", echo)
    if opts.sizes:
        await step(report, f"{section} blobs, direct (linear stdio transport → kitchen)", direct_blobs)
        await step(report, f"{section} blobs, gateway (linear stdio transport → gateway → kitchen)", gateway_blobs)
    report_pair(report, section, direct, gateway, opts, {"p50": 2.0, "p99": 2.5, "throughput": 0.6})


async def http_pair(tmp: Path, opts: Options, report: Report) -> None:
    section = "http→stdio"
    direct, gateway = Side(), Side()

    async def echo() -> None:
        config = gateway_config(tmp / "http-echo", {"k": kitchen("k", timeout_s=TIMEOUT_S)})
        async with (
            http_kitchen(tmp) as kitchen_base,
            http_gateway(config) as gateway_base,
            http_client(kitchen_base, read_timeout_seconds=TIMEOUT_S) as direct_client,
            http_client(gateway_base, read_timeout_seconds=TIMEOUT_S) as gateway_client,
        ):
            await echo_pair(Peer(direct_client, "echo", direct), Peer(gateway_client, "k.echo", gateway), opts)

    async def direct_blobs() -> None:
        async with http_kitchen(tmp) as base, http_client(base, read_timeout_seconds=TIMEOUT_S) as client:
            await blobs(client, "blob", opts.sizes, opts.blob_repeats, None, direct.blobs)

    async def gateway_blobs() -> None:
        config = gateway_config(tmp / "http-blob", {"k": kitchen("k", timeout_s=TIMEOUT_S)})
        async with http_gateway(config) as base, http_client(base, read_timeout_seconds=TIMEOUT_S) as client:
            await blobs(client, "k.blob", opts.sizes, opts.blob_repeats, find_gateway(config), gateway.blobs)

    await step(
        report, f"{section} echo, direct (HTTP client → kitchen --transport http) and gateway (→ kitchen stdio)", echo
    )
    if opts.sizes:
        await step(report, f"{section} blobs, direct", direct_blobs)
        await step(
            report,
            f"{section} blobs, gateway (Streamable HTTP client → gateway serve --http → kitchen stdio)",
            gateway_blobs,
        )
    report_pair(report, section, direct, gateway, opts, {"p50": 1.15, "p99": 2.5, "throughput": 0.9})


# -- main ----------------------------------------------------------------------------------------


async def lists(tmp: Path, opts: Options, report: Report) -> None:
    await list_section(tmp, opts.list_iterations, report)


async def run(opts: Options) -> Report:
    report = Report()
    with tempfile.TemporaryDirectory(prefix="proxy-overhead-") as name:
        tmp = Path(name)
        try:
            for section in (stdio_pair, http_pair, lists):
                try:
                    await section(tmp, opts, report)
                except Exception as exc:  # noqa: BLE001 -- report the failure, still run the other sections
                    report.notes.append(f"{section.__name__} FAILED: {type(exc).__name__}: {exc}")
                    print(f"{section.__name__} FAILED: {exc!r}", flush=True)
        finally:
            if (leaked := kill_leftover_children()) is not None:
                report.notes.append(leaked)
    report.notes.append(
        "stdio→stdio echo/throughput use the SDK's stock stdio client for both sides; blob rows use the "
        "project's linear transport (adapters.stdio_transport) for both the direct baseline and the "
        "client→gateway hop, because the stock client reads large lines in O(n²) and would dominate the time."
    )
    report.notes.append(
        "http→stdio compares kitchen's own Streamable HTTP server with the gateway's HTTP front (downstream "
        "kitchen over stdio), as one would compare against mcp-proxy."
    )
    report.notes.append(
        "Every gateway runs with limits {max_inline_bytes: 1 GiB, max_request_bytes: 1 GiB} (and max_message_bytes "
        "512 MiB), so the size guard passes results and arguments through: this measures raw proxying. With the "
        "default limits results over 20,000 bytes are spilled and previewed (see bench/pipeline_cost.py)."
    )
    report.notes.append(
        "gw extra RSS = peak RSS of the gateway process during the call (psutil every ~10 ms, plus VmHWM "
        "after resetting it via /proc/PID/clear_refs) − its RSS just before the call; target ≤ 3× payload."
    )
    return report


def parse_args(argv: list[str] | None) -> Options:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: few calls, 10 MB only")
    parser.add_argument("--sizes", help="blob sizes in MB, comma-separated (default 10,50,100; '' skips)")
    parser.add_argument("--calls", type=int, help="sequential echo calls for latency (default 300)")
    parser.add_argument("--warmup", type=int, help="warm-up echo calls (default 30)")
    parser.add_argument("--concurrency", type=int, default=16, help="concurrent callers for throughput")
    parser.add_argument("--throughput-calls", type=int, help="calls for throughput (default 800)")
    parser.add_argument("--list-iterations", type=int, help="tools/list samples (default 30)")
    parser.add_argument("--blob-repeats", type=int, default=1, help="calls per blob size (median wall)")
    args = parser.parse_args(argv)
    quick: bool = args.quick
    sizes_arg: str | None = args.sizes
    if sizes_arg is None:
        sizes_arg = "10" if quick else "10,50,100"
    return Options(
        calls=args.calls or (40 if quick else 300),
        warmup=args.warmup if args.warmup is not None else (10 if quick else 30),
        throughput_calls=args.throughput_calls or (160 if quick else 800),
        concurrency=args.concurrency,
        sizes=[int(s) for s in sizes_arg.split(",") if s.strip()],
        list_iterations=args.list_iterations or (5 if quick else 30),
        blob_repeats=max(1, args.blob_repeats),
    )


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    if Path.cwd().resolve() != ROOT:
        os.chdir(ROOT)
    print(
        f"proxy overhead: python {sys.version.split()[0]}, {os.cpu_count()} CPUs, calls={opts.calls} "
        f"(+{opts.warmup} warm-up), throughput {opts.throughput_calls} calls × {opts.concurrency} callers, "
        f"blob sizes {opts.sizes} MB, tools/list samples {opts.list_iterations}",
        flush=True,
    )
    started = time.perf_counter()
    report = anyio.run(run, opts)
    print(f"\ndone in {time.perf_counter() - started:.0f} s\n")
    report.print()
    misses = [r for r in report.rows if r.ok is False]
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
