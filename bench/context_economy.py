"""Context economy: what a client is listed per exposure mode, and how well and how fast find_tools finds.

Usage, from the repository root: `.venv/bin/python -m bench.context_economy [--iterations 300]`.

1. `gateway prepare` installs the example's real mcp-gitlab 0.21.2, mcp-atlassian 0.23.1 and mcp-server-git
   (its `package:` entries) into their own environments under the test lab's `.envs/` (`$GATEWAY_ENVS` wins;
   reused when present).
2. `config/examples/gitlab-jira.yaml` starts with dummy credentials; per exposure mode: tools, characters of
   the listed definitions (JSON), ~tokens (chars / 4) and how much of it is the gateway's and Think's own.
3. A real client on a stdio gateway lists its tools and runs the labelled set
   (`bench/context_economy_tasks.yaml`: a task in a user's words -> the expected tool) through
   `gateway.find_tools`: recall@1, recall@5, MRR.
4. `find_tools` latency, p50/p99: the index alone (in process) and the client round trip, at that catalog and
   at a synthetic 1,000-tool one (a kitchen server with 1,000 tools behind the gateway).
5. The first use of a hidden tool: round trips by exact name, and by find then call.

Targets (PASS/MISS): auto on the example ≤ 40 tools and ≤ 32,000 chars with own definitions ≤ 8,000;
recall@5 ≥ 0.90; find_tools p50 < 5 ms at 1,000 tools; at most one extra round trip for a hidden tool.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import yaml
from mcp import Client

from gateway.app import prepare as packages
from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.middleware.exposure import figures
from gateway.middleware.exposure.search import SearchIndex
from tests.harness import ROOT, gateway_params, kitchen, write_config

EXAMPLE = ROOT / "config" / "examples" / "gitlab-jira.yaml"
TASKS = Path(__file__).with_name("context_economy_tasks.yaml")
DUMMY = {
    "GITLAB_URL": "https://gitlab.invalid",
    "GITLAB_TOKEN": "dummy",
    "JIRA_URL": "https://jira.invalid",
    "JIRA_USERNAME": "bench@example.invalid",
    "JIRA_API_TOKEN": "dummy",
}


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def percentiles(samples: list[float]) -> tuple[float, float]:
    """p50 and p99 in milliseconds."""
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000


def tasks() -> list[dict[str, str]]:
    loaded: list[dict[str, str]] = yaml.safe_load(TASKS.read_text(encoding="utf-8"))["tasks"]
    return loaded


async def interleaved(client: Client, queries: list[str], iterations: int) -> dict[str, tuple[float, float]]:
    """find_tools and gateway.status (a trivial hosted tool: the path's floor) alternated in one run."""
    samples: dict[str, list[float]] = {"find": [], "status": []}
    for i in range(iterations):
        for kind in ("find", "status"):
            start = time.perf_counter()
            if kind == "find":
                await client.call_tool("gateway.find_tools", {"query": queries[i % len(queries)]})
            else:
                await client.call_tool("gateway.status", {})
            samples[kind].append(time.perf_counter() - start)
    return {kind: percentiles(values) for kind, values in samples.items()}


def index_latency(
    entries: list[tuple[str, str, types.Tool]], queries: list[str], iterations: int
) -> tuple[float, float]:
    index = SearchIndex()
    index.build(entries)
    samples = []
    for i in range(iterations):
        start = time.perf_counter()
        index.search(queries[i % len(queries)], limit=5)
        samples.append(time.perf_counter() - start)
    return percentiles(samples)


async def example_figures(iterations: int) -> tuple[list[dict[str, Any]], list[tuple[str, str, types.Tool]]]:
    gateway = Gateway(load_config(EXAMPLE))
    async with gateway.running():
        catalog = await gateway.registry.catalog()
        status = gateway.registry.status()
    down = [name for name, s in status.items() if s["state"] != "up"]
    if down:
        raise SystemExit(f"servers not up: {down}; see the log above (`gateway check --config {EXAMPLE}`) and retry")
    entries = [(e.exposed, e.server, e.item) for e in catalog.tools.values() if isinstance(e.item, types.Tool)]
    return figures.rows(gateway.exposure, catalog), entries


async def quality_and_round_trips(iterations: int) -> dict[str, Any]:
    """Through a real stdio gateway on the example: the labelled set, find_tools round trips, a hidden call."""
    env = {**DUMMY, "PATH": os.environ.get("PATH", ""), "GATEWAY_ENVS": os.environ["GATEWAY_ENVS"]}
    out: dict[str, Any] = {}
    async with Client(gateway_params(EXAMPLE, env=env), mode="legacy") as client:
        listed = {t.name for t in (await client.list_tools()).tools}
        ranks: list[int | None] = []
        for task in tasks():
            found = await client.call_tool("gateway.find_tools", {"query": task["task"], "limit": 10})
            names = [hit["name"] for hit in (found.structured_content or {}).get("tools", [])]
            ranks.append(names.index(task["expect"]) + 1 if task["expect"] in names else None)
            if ranks[-1] != 1:
                out.setdefault("misses", []).append((task["task"], task["expect"], names[:3]))
        out["round_trip"] = await interleaved(client, [t["task"] for t in tasks()], iterations)
        hidden = "git.git_status"
        out["hidden_listed"] = hidden in listed
        direct = await client.call_tool(hidden, {"repo_path": str(ROOT)})
        out["hidden_direct_ok"] = not direct.is_error
    n = len(ranks)
    out["recall1"] = sum(r == 1 for r in ranks) / n
    out["recall5"] = sum(r is not None and r <= 5 for r in ranks) / n
    out["mrr"] = sum(1 / r for r in ranks if r) / n
    out["n"] = n
    return out


async def synthetic_round_trip(iterations: int) -> tuple[dict[str, tuple[float, float]], int]:
    """find_tools through a stdio gateway in front of a kitchen server: 984 generated + 10 + 16 own = 1,010 tools."""
    with tempfile.TemporaryDirectory() as tmp:
        config = write_config(Path(tmp), {"k": kitchen("k", "--tools", "984")})
        async with Client(gateway_params(config), mode="legacy") as client:
            found = await client.call_tool("gateway.find_tools", {"query": "records"})
            total = int((found.structured_content or {}).get("total", 0))
            queries = [t["task"] for t in tasks()] + ["records matching the query", "synthetic catalog entry 500"]
            return await interleaved(client, queries, iterations), total


def synthetic_entries(n: int) -> list[tuple[str, str, types.Tool]]:
    """n tools with varied names, descriptions and parameters (verbs x objects x servers)."""
    verbs = ["list", "get", "create", "update", "delete", "search", "sync", "export", "import", "archive"]
    objects = [
        "issue",
        "merge_request",
        "pipeline",
        "job",
        "branch",
        "tag",
        "release",
        "user",
        "group",
        "project",
        "comment",
        "label",
        "milestone",
        "sprint",
        "board",
        "page",
        "space",
        "file",
        "commit",
        "variable",
    ]
    servers = [f"srv{i}" for i in range(5)]
    out = []
    for i in range(n):
        verb, obj, server = verbs[i % 10], objects[(i // 10) % 20], servers[(i // 200) % 5]
        name = f"{verb}_{obj}" if i < 200 else f"{verb}_{obj}_{i}"
        schema = {"type": "object", "properties": {f"{obj}_id": {"type": "string", "description": f"The {obj}."}}}
        tool = types.Tool(
            name=name, description=f"{verb.title()} a {obj.replace('_', ' ')} (variant {i}).", input_schema=schema
        )
        out.append((f"{server}.{name}", server, tool))
    return out


def print_round_trips(what: str, trips: dict[str, tuple[float, float]]) -> None:
    (find50, find99), (floor50, floor99) = trips["find"], trips["status"]
    print(
        f"round trip, {what}: find_tools p50 {find50:.2f} ms p99 {find99:.2f} ms | gateway.status p50 {floor50:.2f} ms "
        f"p99 {floor99:.2f} ms | find_tools' own share at p50 {find50 - floor50:.2f} ms   target < 5 ms "
        f"{verdict(find50 - floor50 < 5)}"
    )


async def main_async(iterations: int) -> None:
    os.environ.update(DUMMY)
    os.environ.setdefault("GATEWAY_ENVS", str(ROOT / ".envs"))  # the test lab's (scripts/setup-lab prepares it)
    if await packages.prepare(load_config(EXAMPLE), EXAMPLE, []):
        raise SystemExit(f"the servers of {EXAMPLE} could not be installed (see above); fix that and retry")
    print("== what a client is listed: config/examples/gitlab-jira.yaml (real servers, dummy credentials)")
    rows, entries = await example_figures(iterations)
    print("\n".join(figures.render(rows)))
    auto = next(r for r in rows if r["view"].startswith("default"))
    fits = auto["tools"] <= 40 and auto["chars"] <= 32_000 and auto["own_chars"] <= 8000
    print(
        f"target auto ≤ 40 tools, ≤ 32,000 chars, own ≤ 8,000: {auto['tools']} / {auto['chars']:,} / "
        f"{auto['own_chars']:,} {verdict(fits)}"
    )
    full = next(r for r in rows if r["view"] == "mode all")
    print(f"reduction all -> auto: {1 - auto['chars'] / full['chars']:.1%} of the characters")
    queries = [t["task"] for t in tasks()]
    print(f"\n== find_tools latency (index alone, in process; {iterations} queries from the labelled set)")
    p50, p99 = index_latency(entries, queries, iterations)
    print(f"example catalog ({len(entries)} tools): p50 {p50:.3f} ms  p99 {p99:.3f} ms")
    synthetic = synthetic_entries(1000)
    p50, p99 = index_latency(synthetic, queries, iterations)
    print(f"synthetic catalog (1,000 tools): p50 {p50:.3f} ms  p99 {p99:.3f} ms   target p50 < 5 ms {verdict(p50 < 5)}")
    start = time.perf_counter()
    SearchIndex().build(synthetic)
    print(f"index build, 1,000 tools: {(time.perf_counter() - start) * 1000:.1f} ms (once per catalog change)")
    print("\n== through a real client (stdio gateway): retrieval quality and round trips")
    q = await quality_and_round_trips(iterations)
    print(
        f"labelled set: {q['n']} tasks  recall@1 {q['recall1']:.3f}  recall@5 {q['recall5']:.3f}  MRR {q['mrr']:.3f}"
        f"   target recall@5 ≥ 0.90 {verdict(q['recall5'] >= 0.90)}"
    )
    for task, expect, got in q.get("misses", []):
        print(f"  not first: {task!r}: want {expect}, got {got}")
    print_round_trips("example catalog (181 tools)", q["round_trip"])
    trips, matched = await synthetic_round_trip(iterations)
    print_round_trips(f"1,010-tool kitchen ({matched} tools match 'records')", trips)
    extra = 0 if q["hidden_direct_ok"] else 1
    print(
        f"first use of a hidden tool (git.git_status, listed: {q['hidden_listed']}): by exact name {extra} extra round "
        f"trips; through find_tools then a call: 1   target ≤ 1 {verdict(extra <= 1)}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--iterations", type=int, default=300)
    args = parser.parse_args(argv)
    anyio.run(main_async, args.iterations)
    return 0


if __name__ == "__main__":
    sys.exit(main())
