"""How well and how fast `gateway.find_tools` ranks, per ranker (lexical, semantic, hybrid), on held-out queries.

Usage, from the repository root: `.venv/bin/python -m bench.find_quality [--split heldout|tune] [--iterations 2000]`.

The catalogs are snapshots of what the gateway aggregates (`bench/find_quality/*.json`: exposed name, server,
description, input schema), so the bench needs no server: `gitlab-jira` is config/examples/gitlab-jira.yaml
(181 tools), `everything` the default config plus the reference server-everything (47 tools). Each has
labelled queries in users' words (`*.yaml`) in two halves: `tune` may guide a choice, `heldout` is the one
reported and is never tuned on. `context-economy` is the older 80-task set the lexical ranker's synonyms
were tuned on: shown for comparison, not as evidence. `livemcptool` and `livemcp-steps` are an unseen set from
elsewhere (bench/_livemcp.py): the LiveMCPBench tasks (95 multi-step tasks, each with the tools its annotators
used) over its 527-tool catalog, searched with each task's whole text (`livemcptool`) and with one query per step
(`livemcp-steps`: its annotators' steps, each paired with the tools it asks for); nothing is tuned on them (both
splits show all of them, and only their figures are printed).

`hyb+samp` (LiveMCPBench): hybrid + expansions with what a client's model wrote for each tool through MCP sampling,
the bench answering the gateway's sampling requests from `bench/livemcptool/sampled.json` (written from each tool's
name and description alone, without the tasks: see its note); the figure without them is the `hyb+exp` row.
Per ranker: recall@1/5/10, MRR and nDCG@10 (one relevant tool, or any of several listed). `+exp` rankers index
each tool's expansions (the shipped packs, config/expansions/, written from tool text only). `hyb+learn` is
learning from use: a stream of queries is replayed first, each a turn of one search then a call of its labelled
tool, which teaches the index only when that search found the tool in its top 10 (as the gateway learns: a call
of a tool the turn's search found); then the scored half is searched. The stream is the tune half (gitlab-jira,
everything) or, for LiveMCPBench (no halves), its even-numbered tasks (or their steps), the odd ones scored.
Then the cost: query latency p50/p99 and index build time at the catalog and at 1,000 tools (the expanded
catalog repeated: every tool with its pack), and the RSS the model adds.
Targets (PASS/MISS) on held-out, with expansions: recall@5 ≥ 0.92, recall@10 ≥ 0.95, recall@1 ≥ 0.65; LiveMCPTool
whole task recall@5 ≥ 0.75; at 1,000 tools find p50 ≤ 20 ms, p99 ≤ 100 ms, build ≤ 1 s; RSS +≤ 100 MB.
"""

import argparse
import asyncio
import json
import math
import statistics
import time
from pathlib import Path

import mcp.types as types
import psutil
import yaml

from bench import _livemcp as live
from bench._livemcp import Entries, Labelled
from gateway.middleware.exposure import semantic
from gateway.middleware.exposure.expansions import Expansions
from gateway.middleware.exposure.search import SearchIndex
from gateway.store.local.expansions import LocalExpansions

HERE = Path(__file__).with_name("find_quality")
CATALOGS = ("gitlab-jira", "everything")
LIVE = ("livemcptool", "livemcp-steps")
"""LiveMCPBench, whole task and one query per step (bench/_livemcp.py): unseen, figures only."""
RANKERS: dict[str, dict[str, bool]] = {
    "lexical": {"semantic": False, "expanded": False},
    "semantic": {"lexical": False, "expanded": False},
    "hybrid": {"expanded": False},
    "lex+exp": {"semantic": False},
    "hyb+exp": {},
}
"""`+exp`: with expansions (the shipped packs in config/expansions/; plus, in the `+learn` rows, what replaying the
tune half's queries and calls taught)."""


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def catalog(name: str) -> Entries:
    if name in LIVE:
        return live.entries()
    rows = json.loads((HERE / f"{name}.json").read_text(encoding="utf-8"))
    return [
        (
            r["name"],
            r["server"],
            types.Tool(name=r["name"].split(".", 1)[1], description=r["description"], input_schema=r["inputSchema"]),
        )
        for r in rows
    ]


def queries(name: str, split: str) -> Labelled:
    if name == "livemcptool":
        return live.tasks()
    if name == "livemcp-steps":
        return live.steps()
    if name == "context-economy":
        tasks = yaml.safe_load((HERE.parent / "context_economy_tasks.yaml").read_text(encoding="utf-8"))["tasks"]
        return [(t["task"], {t["expect"]}) for t in tasks]
    loaded = yaml.safe_load((HERE / f"{name}.yaml").read_text(encoding="utf-8"))[split]
    return [(q["q"], {q["expect"]} if isinstance(q["expect"], str) else set(q["expect"])) for q in loaded]


def scores(index: SearchIndex, labelled: Labelled) -> tuple[dict[str, float], list[str]]:
    ranks: list[int | None] = []
    misses: list[str] = []
    for query, expected in labelled:
        names = [hit.name for hit in index.search(query, limit=10).hits]
        rank = next((i for i, name in enumerate(names, 1) if name in expected), None)
        ranks.append(rank)
        if rank is None or rank > 5:
            misses.append(f"{query!r} -> {sorted(expected)[0]} (rank {rank or '>10'}; top: {names[:2]})")
    n = len(ranks)
    found = [r for r in ranks if r is not None]
    return {
        "r@1": sum(r == 1 for r in found) / n,
        "r@5": sum(r <= 5 for r in found) / n,
        "r@10": len(found) / n,
        "mrr": sum(1 / r for r in found) / n,
        "ndcg@10": sum(1 / math.log2(r + 1) for r in found) / n,
    }, misses


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000


def latency(index: SearchIndex, texts: list[str], iterations: int) -> tuple[float, float]:
    samples = []
    for i in range(iterations):
        start = time.perf_counter()
        index.search(texts[i % len(texts)], limit=5)
        samples.append(time.perf_counter() - start)
    return percentiles(samples)


def synthetic(n: int, base: Entries) -> Entries:
    """`n` tools: the real catalog's repeated under numbered servers (real descriptions, real vocabulary)."""
    return [(f"s{i}.{name}", f"s{i}", tool) for i in range(n // len(base) + 1) for name, _s, tool in base][:n]


def learned(entries: Entries, stream: Labelled) -> tuple[SearchIndex, int]:
    """An index with packs that was used: each query of `stream` searched, then its tool called (see the docstring).
    Returns the index and how many turns taught it."""
    index = SearchIndex()
    index.expansions = taught = Expansions(LocalExpansions())
    index.build(entries)
    lessons = 0

    async def replay() -> None:
        nonlocal lessons
        for query, expected in stream:
            found = [hit.name for hit in index.search(query, limit=10).hits]
            taught.searched("replay", query, found)
            called = next((name for name in found if name in expected), sorted(expected)[0])
            lessons += bool(await taught.called("replay", called))

    asyncio.run(replay())
    return index, lessons


def halves(name: str, split: str) -> tuple[Labelled, Labelled]:
    """(the stream replayed for learning, the queries scored after it)."""
    if name == "livemcptool":
        tasks = queries(name, split)
        return tasks[::2], tasks[1::2]
    if name == "livemcp-steps":
        return live.steps(parity=0), live.steps(parity=1)
    return queries(name, "tune"), queries(name, split)


def indexes(entries: Entries, sampled: bool) -> list[tuple[str, SearchIndex]]:
    """An index per ranker over `entries`; with `sampled`, also hybrid + expansions + sampled ones (`hyb+samp`)."""
    built = []
    for ranker, options in RANKERS.items():
        index = SearchIndex(**options)
        index.build(entries)
        built.append((ranker, index))
    return [*built, ("hyb+samp", live.sampled(entries))] if sampled else built


def quality(split: str, verbose: bool) -> None:
    print(f"== ranking quality on the {split} half (context-economy: the tuned-on set, for comparison)")
    print(f"{'catalog':<16} {'ranker':<10} {'n':>3}  {'r@1':>5} {'r@5':>5} {'r@10':>5} {'MRR':>5} {'nDCG@10':>7}")
    live_indexes: list[tuple[str, SearchIndex]] = []  # both LiveMCPBench measures search one catalog
    for name in (*CATALOGS, *LIVE, "context-economy"):
        entries = catalog("gitlab-jira" if name == "context-economy" else name)
        labelled = queries(name, split)
        if name in LIVE:
            live_indexes = live_indexes or indexes(entries, sampled=True)
        ranked = live_indexes if name in LIVE else indexes(entries, sampled=False)
        runs = [(ranker, index, labelled) for ranker, index in ranked]
        if name != "context-economy":
            stream, scored = halves(name, split)
            index, lessons = learned(entries, stream)
            if name in LIVE:  # the same scored half without the lessons, to compare with
                runs.append(("hyb+exp½", ranked[len(RANKERS) - 1][1], scored))
            runs.append(("hyb+learn", index, scored))
            print(f"  ({name}: {lessons} of {len(stream)} replayed turns taught a tool)")
        for ranker, index, scored in runs:
            got, misses = scores(index, scored)
            figures = " ".join(f"{got[k]:>5.2f}" for k in ("r@1", "r@5", "r@10", "mrr"))
            line = f"{name:<16} {ranker:<10} {len(scored):>3}  {figures} {got['ndcg@10']:>7.2f}"
            if ranker in ("hyb+exp", "hyb+learn") and name in CATALOGS:
                line += (
                    f"   r@5 ≥ 0.92 {verdict(got['r@5'] >= 0.92)}  r@10 ≥ 0.95 {verdict(got['r@10'] >= 0.95)}"
                    f"  r@1 ≥ 0.65 {verdict(got['r@1'] >= 0.65)}"
                )
            elif ranker in ("hyb+exp", "hyb+learn", "hyb+samp") and name == "livemcptool":
                line += f"   r@5 ≥ 0.75 {verdict(got['r@5'] >= 0.75)}"
            print(line)
            if verbose and ranker == "hyb+exp" and name not in LIVE:  # unseen sets: figures only
                print("\n".join(f"    miss: {m}" for m in misses))


def cost(iterations: int) -> None:
    process = psutil.Process()
    before = process.memory_info().rss
    start = time.perf_counter()
    model = semantic.embedder()
    loaded = time.perf_counter() - start
    print(f"\n== cost   model: {semantic.MODEL if model else semantic.problem}")
    grown = (process.memory_info().rss - before) / 2**20
    print(f"model load: {loaded * 1000:.0f} ms once per process; RSS +{grown:.1f} MB")
    base = catalog("gitlab-jira")
    texts = [q for name in CATALOGS for q, _e in queries(name, "heldout")]
    for n in (len(base), 1_000):
        entries = base if n == len(base) else synthetic(n, base)
        for ranker, options in RANKERS.items():
            index = SearchIndex(**options)
            start = time.perf_counter()
            index.build(entries)
            built = time.perf_counter() - start
            p50, p99 = latency(index, texts, iterations)
            line = f"{n:>5} tools {ranker:<9} build {built * 1000:>6.1f} ms   find p50 {p50:.3f} ms  p99 {p99:.3f} ms"
            if n == 1_000 and ranker == "hyb+exp":
                line += f"   build ≤ 1 s {verdict(built <= 1)}  p50 ≤ 20 ms {verdict(p50 <= 20)}"
                line += f"  p99 ≤ 100 ms {verdict(p99 <= 100)}"
            print(line)
    grown = (process.memory_info().rss - before) / 2**20
    print(f"RSS after the model and the indexes: +{grown:.1f} MB   +≤ 100 MB {verdict(grown <= 100)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=("heldout", "tune"), default="heldout")
    parser.add_argument("--iterations", type=int, default=2_000)
    parser.add_argument("--misses", action="store_true", help="list the hybrid ranker's misses (tune half only)")
    args = parser.parse_args(argv)
    cost(args.iterations)  # first: the RSS the model adds is measured before any index exists
    quality(args.split, args.misses and args.split == "tune")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
