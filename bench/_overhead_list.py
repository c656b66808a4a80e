"""`bench.proxy_overhead`'s tools/list section: one listing of ten downstreams through the gateway (cached and
uncached) against ten direct listings of one such downstream."""

import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from bench._overhead_report import Report
from bench._processes import gateway_config
from tests.harness import KITCHEN, PYTHON, gateway_params, kitchen

LIST_SERVERS = 10
LIST_TOOLS = 50


async def timed(fn: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


async def list_section(tmp: Path, iterations: int, report: Report) -> None:
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
        direct = [await timed(lambda: direct_ten(client)) for _ in range(iterations)]

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
            samples = [await timed(one) for _ in range(iterations)]
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
