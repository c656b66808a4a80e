"""Before/after: this checkout's gateway against another checkout's, interleaved in one run, on both fronts.

Usage, from the repository root:
`.venv/bin/python -m bench.before_after --before /path/to/old/checkout [--calls 300] [--total 1600] [--mode both]`

The other checkout needs its own `.venv` (run its `./scripts/setup`). Both gateways front the same kitchen
server over stdio with the same config (pass-through size limits). Latency: echo calls alternate between
the two gateways call by call; throughput: rounds of `--total` calls by 16 callers alternate. So the
machine's noise falls on both alike; the ratio column is after / before.
"""

import argparse
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from bench._harness import echo_once, kill_leftover_children, percentile, table, throughput
from bench._processes import PASS_THROUGH_LIMITS, accepting
from tests.harness import KITCHEN, PYTHON, ROOT, free_port, served, write_config

CONCURRENCY = 16
MODES = ("legacy", "2026-07-28")
START_S = 180
"""How long a gateway may take to start: a loaded machine takes over the tests' 30 s."""


@dataclass
class Side:
    label: str
    latencies: list[float] = field(default_factory=list[float])
    rates: list[float] = field(default_factory=list[float])


def _config(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    kitchen = {"transport": "stdio", "command": PYTHON, "args": [KITCHEN, "--name", "k"]}
    return write_config(directory, {"k": kitchen}, limits=dict(PASS_THROUGH_LIMITS))


@asynccontextmanager
async def _stdio(checkout: Path, config: Path, mode: str) -> AsyncIterator[Client]:
    python = str(checkout / ".venv" / "bin" / "python")
    params = StdioServerParameters(
        command=python, args=["-m", "gateway", "serve", "--config", str(config)], cwd=str(checkout)
    )
    async with Client(params, mode=mode) as client:
        yield client


@asynccontextmanager
async def _http(checkout: Path, config: Path, mode: str) -> AsyncIterator[Client]:
    python = str(checkout / ".venv" / "bin" / "python")
    port = free_port()
    argv = [python, "-m", "gateway", "serve", "--config", str(config), "--http", f"127.0.0.1:{port}"]
    async with (
        served(
            [*argv, "--log-level", "WARNING"], accepting(port), "gateway", within_s=START_S, cwd=str(checkout)
        ) as base,
        httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300)) as http,
        Client(streamable_http_client(f"{base}/mcp", http_client=http), mode=mode) as client,
    ):
        yield client


async def _compare(front: str, mode: str, before: Path, opts: argparse.Namespace, tmp: Path) -> list[Side]:
    sides = [Side("before"), Side("after")]
    opener = _stdio if front == "stdio" else _http
    async with AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(opener(checkout, _config(tmp / f"{front}-{mode}-{side.label}"), mode))
            for checkout, side in ((before, sides[0]), (ROOT, sides[1]))
        ]
        for _ in range(opts.warmup):
            for client in clients:
                await echo_once(client, "k.echo")
        for _ in range(opts.calls):
            for client, side in zip(clients, sides, strict=True):
                side.latencies.append(await echo_once(client, "k.echo"))
        for _ in range(opts.rounds):
            for client, side in zip(clients, sides, strict=True):
                side.rates.append(opts.total / await throughput(client, "k.echo", opts.total, CONCURRENCY))
    return sides


def _ms(values: list[float]) -> float:
    p50 = percentile(values, 0.5)
    return float("nan") if p50 is None else p50 * 1e3


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else float("nan")


async def run(opts: argparse.Namespace, before: Path) -> None:
    rows: list[list[str]] = []
    modes = MODES if opts.mode == "both" else (opts.mode,)
    with tempfile.TemporaryDirectory(prefix="before-after-") as name:
        try:
            for mode in modes:
                for front in ("stdio", "http"):
                    old, new = await _compare(front, mode, before, opts, Path(name))
                    p50 = (_ms(old.latencies), _ms(new.latencies))
                    rate = (_median(old.rates), _median(new.rates))
                    row = [f"{front} → stdio", mode]
                    rows.append([*row, "echo p50 ms", f"{p50[0]:.2f}", f"{p50[1]:.2f}", f"{p50[1] / p50[0]:.2f}×"])
                    per_s = f"calls/s ×{CONCURRENCY}"
                    rows.append([*row, per_s, f"{rate[0]:.0f}", f"{rate[1]:.0f}", f"{rate[1] / rate[0]:.2f}×"])
                    print(f"{front} {mode}: p50 {p50}, calls/s {rate}", file=sys.stderr, flush=True)
        finally:
            if (leaked := kill_leftover_children()) is not None:
                print(leaked)
    print()
    table(["front → downstream", "client era", "measure", "before", "after", "after/before"], rows, {3, 4, 5})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--before", required=True, help="the other checkout (with its own .venv)")
    parser.add_argument("--calls", type=int, default=300, help="echo calls per side for p50")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--total", type=int, default=1600, help="calls per throughput round")
    parser.add_argument("--rounds", type=int, default=3, help="throughput rounds per side")
    parser.add_argument("--mode", default="both", help="client protocol mode: legacy | 2026-07-28 | both")
    opts = parser.parse_args(argv)
    print(f"before/after: {opts.before} vs {ROOT}, mode {opts.mode}, python {sys.version.split()[0]}", flush=True)
    started = time.perf_counter()
    anyio.run(run, opts, Path(opts.before).resolve())
    print(f"\ndone in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
