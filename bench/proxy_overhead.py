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
import math
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp.types as types
import psutil
from mcp import Client, StdioServerParameters

from adapters import session_only, stdio_transport
from gateway.config import StdioServerConfig
from gateway.sdk import Transport
from tests.harness import (
    KITCHEN,
    PYTHON,
    ROOT,
    gateway_params,
    http_client,
    http_gateway,
    kitchen,
    served,
    write_config,
)

MB = 1_000_000
MAX_MESSAGE_BYTES = 512 * 1024 * 1024  # above the 100 MB blob plus its JSON envelope
PASS_THROUGH_BYTES = 1024 * 1024 * 1024
"""Size-guard limits of the benchmark's gateways: nothing is spilled or refused, so proxying is what is measured."""
PASS_THROUGH_LIMITS: dict[str, Any] = {
    "max_message_bytes": MAX_MESSAGE_BYTES,
    "max_inline_bytes": PASS_THROUGH_BYTES,
    "max_request_bytes": PASS_THROUGH_BYTES,
}
TIMEOUT_S = 300.0
SAMPLE_S = 0.01
LIST_SERVERS = 10
LIST_TOOLS = 50


# -- results -------------------------------------------------------------------------------------


def table(header: Sequence[str], rows: Sequence[Sequence[str]], right: set[int]) -> None:
    cells = [list(header), *(list(r) for r in rows)]
    widths = [max(len(c[i]) for c in cells) for i in range(len(header))]
    for n, row in enumerate(cells):
        print(
            "  ".join(
                v.rjust(w) if i in right else v.ljust(w) for i, (v, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if n == 0:
            print("  ".join("-" * w for w in widths))


@dataclass
class Row:
    section: str
    metric: str
    direct: str
    gateway: str
    ratio: float | None = None
    target: str = ""
    ok: bool | None = None  # None: no target, or not measurable


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list[Row])
    notes: list[str] = field(default_factory=list[str])

    def compare(
        self,
        section: str,
        metric: str,
        direct: float | None,
        gateway: float | None,
        unit: str,
        *,
        at_most: float | None = None,
        at_least: float | None = None,
        fmt: str = "{:.2f}",
    ) -> None:
        """Add a row with ratio gateway/direct, checked against `at_most` or `at_least` when given."""

        def show(v: float | None) -> str:
            return "ERROR" if v is None else f"{fmt.format(v)} {unit}".strip()

        ratio = None if direct is None or gateway is None or direct == 0 else gateway / direct
        target, ok = "", None
        if at_most is not None:
            target = f"≤ {at_most:g}×"
            ok = ratio is not None and ratio <= at_most
        elif at_least is not None:
            target = f"≥ {at_least:g}×"
            ok = ratio is not None and ratio >= at_least
        self.rows.append(Row(section, metric, show(direct), show(gateway), ratio, target, ok))

    def print(self) -> None:
        header = ("section", "metric", "direct", "gateway", "gw/direct", "target", "")
        cells = [header]
        for r in self.rows:
            verdict = "" if r.ok is None else ("PASS" if r.ok else "MISS")
            ratio = "—" if r.ratio is None else f"{r.ratio:.2f}×"
            cells.append((r.section, r.metric, r.direct, r.gateway, ratio, r.target, verdict))
        table(cells[0], cells[1:], {2, 3, 4})
        if self.notes:
            print()
            for note in self.notes:
                print(f"* {note}")


# -- processes -----------------------------------------------------------------------------------


def kitchen_stdio(name: str, *extra: str) -> StdioServerConfig:
    return StdioServerConfig(transport="stdio", command=PYTHON, args=[KITCHEN, "--name", name, *extra])


def gateway_stdio(config: Path) -> StdioServerConfig:
    """The gateway as a stdio server, started like `tests.harness.gateway_params` does."""
    params = gateway_params(config)
    return StdioServerConfig(
        transport="stdio", command=params.command, args=params.args, cwd=params.cwd, env=params.env or {}
    )


def linear(server: StdioServerConfig) -> Transport:
    """The project's linear-time stdio client transport (the SDK's stock one is O(n²) in the line length)."""
    return session_only(stdio_transport(server, max_message_bytes=MAX_MESSAGE_BYTES))


def gateway_config(directory: Path, servers: dict[str, Any], **sections: Any) -> Path:
    """A gateway config in its own folder: its path is unique, which is how `find_gateway` spots the process.

    The size guard gets 1 GiB limits (`PASS_THROUGH_LIMITS`): with its defaults a result over 20,000 bytes
    would be spilled to disk and previewed, and this benchmark measures pass-through proxying.
    """
    directory.mkdir(parents=True)
    return write_config(directory, servers, limits=dict(PASS_THROUGH_LIMITS), **sections)


def find_gateway(config: Path) -> psutil.Process:
    """The gateway process: the one whose command line names this (unique) config path."""
    for proc in psutil.process_iter(["cmdline"]):
        cmdline: list[str] = proc.info.get("cmdline") or []
        if "gateway" in cmdline and str(config) in cmdline:
            return proc
    raise RuntimeError(f"no gateway process runs with --config {config}")


@asynccontextmanager
async def http_kitchen(directory: Path) -> AsyncIterator[str]:
    """Run kitchen with `--transport http --port 0`; yields its base URL once the port file appears."""
    port_file = directory / "kitchen.port"
    port_file.unlink(missing_ok=True)  # left by an earlier kitchen

    async def ready() -> str | None:
        return f"http://127.0.0.1:{port_file.read_text().strip()}" if port_file.exists() else None

    argv = [PYTHON, KITCHEN, "--name", "k", "--transport", "http", "--port", "0", "--port-file", str(port_file)]
    async with served(argv, ready, "kitchen") as base:
        yield base


# -- measurements --------------------------------------------------------------------------------


def text_of(result: types.CallToolResult) -> str:
    first = result.content[0] if result.content else None
    return first.text if isinstance(first, types.TextContent) else ""


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1))]


async def echo_once(client: Client, tool: str) -> float:
    start = time.perf_counter()
    result = await client.call_tool(tool, {"text": "hi"})
    elapsed = time.perf_counter() - start
    if text_of(result) != "hi":
        raise RuntimeError(f"{tool} answered {text_of(result)!r}")
    return elapsed


async def throughput(client: Client, tool: str, total: int, concurrency: int) -> float:
    """Seconds for `total` calls made by `concurrency` callers sharing one session."""
    remaining = total

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await client.call_tool(tool, {"text": "hi"})

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(concurrency):
            tg.start_soon(worker)
    return time.perf_counter() - start


class PeakRss:
    """Peak RSS of one process while a block runs: psutil samples every ~10 ms from a thread.

    Where the kernel allows resetting the high-water mark (`/proc/PID/clear_refs` ← 5), VmHWM is
    read too, so a spike shorter than the sampling interval is not missed.
    """

    def __init__(self, proc: psutil.Process) -> None:
        self.proc = proc
        self.stop = threading.Event()
        self.baseline = 0
        self.peak = 0
        self.hwm_reset = False

    def _hwm(self) -> int:
        with open(f"/proc/{self.proc.pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        return 0

    def start(self) -> None:
        self.baseline = self.peak = int(self.proc.memory_info().rss)
        try:
            with open(f"/proc/{self.proc.pid}/clear_refs", "w", encoding="ascii") as f:
                f.write("5")
            self.hwm_reset = True
        except OSError:
            self.hwm_reset = False

    def sample(self) -> None:
        while not self.stop.wait(SAMPLE_S):
            with suppress(psutil.Error):
                self.peak = max(self.peak, int(self.proc.memory_info().rss))

    def finish(self) -> None:
        with suppress(psutil.Error, OSError):
            self.peak = max(self.peak, int(self.proc.memory_info().rss))
            if self.hwm_reset:
                self.peak = max(self.peak, self._hwm())

    @property
    def extra(self) -> int:
        return self.peak - self.baseline


@dataclass
class Blob:
    wall_s: float | None
    received: int | None
    extra_rss: int | None = None
    error: str | None = None


async def blob_call(client: Client, tool: str, n: int, proc: psutil.Process | None) -> Blob:
    rss = PeakRss(proc) if proc is not None else None
    try:
        if rss is not None:
            rss.start()
        start = time.perf_counter()
        async with anyio.create_task_group() as tg:
            if rss is not None:
                tg.start_soon(anyio.to_thread.run_sync, rss.sample)
            try:
                with anyio.fail_after(TIMEOUT_S + 30):
                    result = await client.call_tool(tool, {"n": n}, read_timeout_seconds=TIMEOUT_S)
            finally:
                if rss is not None:
                    rss.stop.set()
        wall = time.perf_counter() - start
        if rss is not None:
            rss.finish()
        received = len(text_of(result))
        error = None
        if result.is_error or received != n:
            error = f"is_error={result.is_error}, {received:,} chars: {text_of(result)[:200]!r}"
        del result
        return Blob(wall, received, None if rss is None else rss.extra, error)
    except Exception as exc:  # noqa: BLE001 -- a failing call is a finding to report, not a reason to stop
        return Blob(None, None, None, f"{type(exc).__name__}: {exc}")


async def blobs(
    client: Client, tool: str, sizes: list[int], repeats: int, proc: psutil.Process | None, out: list[Blob]
) -> None:
    """Append one `Blob` per size to `out`: the median wall time and the largest extra RSS over `repeats` calls."""
    await client.call_tool(tool, {"n": 1000})  # warm-up: first call, tools/list for output schemas
    for size in sizes:
        runs = [await blob_call(client, tool, size * MB, proc) for _ in range(repeats)]
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


async def timed(fn: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


async def list_section(tmp: Path, opts: Options, report: Report) -> None:
    section = "tools/list"
    extra = ("--tools", str(LIST_TOOLS))
    expected = LIST_SERVERS * (LIST_TOOLS + 10)  # kitchen has 10 built-in tools

    async def direct_ten(client: Client) -> None:
        for _ in range(LIST_SERVERS):
            await client.list_tools(cache_mode="bypass")

    print(f"[{section}] direct: one kitchen --tools {LIST_TOOLS}, listed {LIST_SERVERS}× in a row", flush=True)
    params = StdioServerParameters(command=PYTHON, args=[KITCHEN, "--name", "k", *extra])
    async with Client(params) as client:
        direct_first = await timed(lambda: direct_ten(client))
        direct = [await timed(lambda: direct_ten(client)) for _ in range(opts.list_iterations)]

    servers = {f"s{i}": kitchen(f"s{i}", *extra) for i in range(LIST_SERVERS)}
    results: dict[str, tuple[float, list[float], int]] = {}
    for label, sections in (("cached", {}), ("uncached", {"namespace": {"catalog_ttl_s": 0.001}})):
        print(f"[{section}] gateway ({label}): {LIST_SERVERS} kitchens --tools {LIST_TOOLS}", flush=True)
        config = gateway_config(tmp / f"list-{label}", servers, **sections)
        async with Client(gateway_params(config)) as client:
            count = 0

            async def one() -> None:
                nonlocal count
                count = len((await client.list_tools(cache_mode="bypass")).tools)

            first = await timed(one)
            samples = [await timed(one) for _ in range(opts.list_iterations)]
            results[label] = (first, samples, count)
            if count < expected:
                report.notes.append(
                    f"tools/list ({label}) through the gateway returned {count} tools, expected ≥ {expected}"
                )

    d50 = statistics.median(direct) * 1e3
    report.compare(section, "first list vs first 10 direct", direct_first * 1e3, results["cached"][0] * 1e3, "ms")
    report.compare(section, "p50 cached vs 10 direct", d50, statistics.median(results["cached"][1]) * 1e3, "ms")
    report.compare(section, "p50 uncached vs 10 direct", d50, statistics.median(results["uncached"][1]) * 1e3, "ms")
    report.notes.append(
        f"tools/list: gateway = one list of {LIST_SERVERS} kitchens × ({LIST_TOOLS}+10 tools) = "
        f"{results['cached'][2]} tools incl. gateway.*; direct = {LIST_SERVERS} sequential lists of one such kitchen "
        f"(same total catalog). 'cached' uses the default catalog TTL (300 s): the gateway already listed every "
        f"downstream at startup, so even its first list is served from the catalog cache. 'uncached' sets "
        f"namespace.catalog_ttl_s=0.001, so every list fans out to all {LIST_SERVERS} downstreams (concurrently)."
    )


# -- main ----------------------------------------------------------------------------------------


def kill_leftover_children() -> str | None:
    """Kill every child process still running; a note naming them, or None when there were none."""
    leaked = [p for p in psutil.Process().children(recursive=True) if p.is_running()]
    if not leaked:
        return None
    names = ", ".join(f"{p.pid} {' '.join(p.cmdline()[:4])}" for p in leaked if p.is_running())
    for proc in leaked:
        with suppress(psutil.Error):
            proc.kill()
    return f"LEAKED processes were still running at the end and were killed: {names}"


async def run(opts: Options) -> Report:
    report = Report()
    with tempfile.TemporaryDirectory(prefix="proxy-overhead-") as name:
        tmp = Path(name)
        try:
            for section in (stdio_pair, http_pair, list_section):
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
