"""Scale: the LiveMCPTool catalog (70 public MCP servers, 527 tools; LiveMCPBench, Apache-2.0) behind the gateway.

Usage, from the repository root: `.venv/bin/python -m bench.livemcptool_scale [--iterations 500]`.

Each of the 70 servers runs as a real stdio process (`tests/servers/listing.py`) listing its tools as the
catalog gives them (`bench/livemcptool/tools.json`, see NOTICE.md there); the gateway runs in this process.
Printed: what a client is listed per exposure mode (tools, chars, the gateway's own), a fresh process's first
find_tools right after its first list (the model loads from that list on, in a worker thread), the index build
(lexical, and lexical + embeddings of every tool, cold, the model loaded), find_tools p50/p99 in process and through
a client,
and the gateway's RSS (this process: gateway and bench; the 70 servers are children and counted apart).
Targets: find_tools p50 < 5 ms, index build < 1 s.
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
import mcp.types as types
import psutil
from mcp import Client

from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.middleware.exposure import figures, semantic
from gateway.middleware.exposure.search import SearchIndex
from tests.harness import ROOT, write_config

DATA = Path(__file__).with_name("livemcptool") / "tools.json"
SERVER = ROOT / "tests" / "servers" / "listing.py"
QUERIES = [
    "what's the weather in Lisbon tomorrow",
    "turn this word document into a pdf",
    "how much is one bitcoin in dollars right now",
    "find recent papers about retrieval augmented generation",
    "take a screenshot of a web page",
    "draw a bar chart of monthly sales",
    "who owns the domain example.com",
    "search the web for the latest news on fusion energy",
    "add a slide with a title to my presentation",
    "read the text of a pdf file",
    "get the transcript of a youtube video",
    "what time is it in Tokyo",
]
"""Queries in users' words, for timing only (no labels: quality is bench/find_quality.py's)."""


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000


def config(folder: Path) -> Path:
    servers = {
        entry["server"]: {
            "transport": "stdio",
            "command": sys.executable,
            "args": [str(SERVER), "--file", str(DATA), "--server", entry["server"]],
        }
        for entry in json.loads(DATA.read_text(encoding="utf-8"))
    }
    return write_config(
        folder,
        servers,
        limits={"startup_wait_s": 300, "outputs_dir": str(folder / "outputs")},
        think={"state_dir": str(folder / "state")},
    )


def build_time(entries: list[tuple[str, str, types.Tool]], **options: bool) -> float:
    index = SearchIndex(**options)
    start = time.perf_counter()
    index.build(entries)
    return time.perf_counter() - start


async def run(iterations: int) -> None:
    process = psutil.Process()
    rss0 = process.memory_info().rss / 2**20
    with tempfile.TemporaryDirectory() as tmp:
        gateway = Gateway(load_config(config(Path(tmp))))
        start = time.perf_counter()
        async with gateway.running():
            catalog = await gateway.registry.catalog()
            started = time.perf_counter() - start
            up = sum(s["state"] == "up" for s in gateway.registry.status().values())
            entries = [(e.exposed, e.server, e.item) for e in catalog.tools.values() if isinstance(e.item, types.Tool)]
            print(
                f"== LiveMCPTool behind the gateway: {up} servers up, {len(entries)} tools ({started:.1f} s to start)"
            )
            print("\n".join(figures.render(figures.rows(gateway.exposure, catalog))))
            async with Client(gateway.front.server, mode="legacy") as client:
                await client.list_tools()  # over budget: find_tools is the way in, and the model starts loading
                t = time.perf_counter()
                await client.call_tool("gateway.find_tools", {"query": QUERIES[0]})
                first = time.perf_counter() - t
            print(f"\nfirst find_tools right after the first list: {first * 1000:.0f} ms (the model's load, begun at")
            print("  that list, finished meanwhile; then the index build)")
            lexical = build_time(entries, semantic=False)
            hybrid = build_time(entries)  # a new index: every tool embedded (the model is loaded by now)
            print(f"index build: lexical {lexical * 1000:.1f} ms; lexical + embeddings {hybrid * 1000:.1f} ms (cold)")
            print(f"  target < 1 s {verdict(hybrid < 1)}; rankers: {gateway.exposure.index.rankers} ({semantic.MODEL})")
            index = SearchIndex()
            index.build(entries)
            samples = []
            for i in range(iterations):
                t = time.perf_counter()
                index.search(QUERIES[i % len(QUERIES)], limit=5)
                samples.append(time.perf_counter() - t)
            p50, p99 = percentiles(samples)
            print(f"find_tools in process: p50 {p50:.3f} ms  p99 {p99:.3f} ms   target p50 < 5 ms {verdict(p50 < 5)}")
            async with Client(gateway.front.server, mode="legacy") as client:
                samples = []
                for i in range(iterations):
                    t = time.perf_counter()
                    await client.call_tool("gateway.find_tools", {"query": QUERIES[i % len(QUERIES)]})
                    samples.append(time.perf_counter() - t)
                p50, p99 = percentiles(samples)
                print(f"find_tools through a client (in-memory transport): p50 {p50:.2f} ms  p99 {p99:.2f} ms")
                found = await client.call_tool("gateway.find_tools", {"query": QUERIES[0]})
                print(f"e.g. {QUERIES[0]!r} -> {[h['name'] for h in (found.structured_content or {})['tools']]}")
            rss = process.memory_info().rss / 2**20
            children = sum(c.memory_info().rss for c in process.children(recursive=True)) / 2**20
            print(f"\ngateway RSS {rss:.0f} MB (+{rss - rss0:.0f} MB over the bench's start, model included);")
            print(f"  the {up} server processes: {children:.0f} MB together")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=500)
    args = parser.parse_args(argv)
    anyio.run(run, args.iterations)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
