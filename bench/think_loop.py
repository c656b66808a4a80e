"""Think loop latency: think.plan and think.next over a generated 20-step workflow, through the Engine and through
an in-process gateway; and what a 50 KB result_snapshot costs think.next.

Usage, from the repository root: `.venv/bin/python -m bench.think_loop [--runs 50] [--guard-runs 30] [--seed 7]`.

The workflow has 20 steps: kitchen tool calls (`k.echo`, `k.measure`) and client-side ones (`prompt.say`,
`local.read`), `when` conditions (one false: a skipped step), a `foreach` over a 3-item capture, and templates
that read earlier captures; plan adds the two driver steps, so a run is 1 plan + 23 next calls. Every snapshot
is a realistic ~1 KB result; the workflow's context budget is 6,000 bytes (so instructions stay under the
gateway's inline limit, see `loop_workflow`). State lives in a temporary folder with real fsync. Both paths run
`--runs` full runs: the Engine directly (`engine.plan`/`engine.next`), then an in-process gateway
(`Gateway(load_config(...))` with the kitchen server as `k`, `mcp.Client(gateway.front.server, mode="legacy")`
calling think.plan/think.next).

The snapshot part times `engine.next` of one step with a tiny snapshot, a 49,000-byte one (just under the
default 50,000-byte limit, stored whole) and a 60 KB one (truncated by the guard), each on a fresh run. Target:
the 50 KB snapshot adds < 10 ms (p50) to think.next over the tiny one: PASS/MISS.
"""

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import yaml
from mcp import Client
from pydantic_core import to_json

from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.hosted.prompts import PromptLibrary
from gateway.store.backends import local_runs
from gateway.store.base import owned
from gateway.think.engine import Engine
from gateway.think.library import Library
from gateway.think.state import StateStore
from gateway.think.validator import Schemas
from tests.harness import write_config
from tests.servers.kitchen import Kitchen

Call = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]

LOOP = "bench_loop"
OWNER = "bench"
GUARD = "bench_guard"
TOOLS = {"k.echo", "k.measure"}
CALLS = ["k.echo", "k.measure", "prompt.say", "local.read"]
TARGET_MS = 10.0
SNAPSHOTS = [("tiny", 0), ("50 KB", 49_000), ("60 KB", 60 * 1024)]
WORDS = "the cache layer keeps one entry per key and evicts the oldest when the budget is reached".split()


def loop_workflow(seed: int) -> dict[str, Any]:
    """20 steps: fetch, a list, a foreach of 3 over it, lint, a true and a false `when`, 13 generated steps that read
    earlier captures (some behind a `when`), and a summary."""
    rng = random.Random(seed)
    steps: list[dict[str, Any]] = [
        {"id": "fetch", "call": "k.echo", "input_template": {"text": "{{ params.target }}"}, "capture_as": "fetch"},
        {
            "id": "list_files",
            "call": "k.echo",
            "input_template": {"text": "files of {{ fetch.title }}"},
            "capture_as": "files",
        },
        {
            "id": "review_file",
            "call": "k.measure",
            "foreach": "files.items",
            "input_template": {"text": "Review {{ item }} ({{ loop.index }}/{{ loop.length }}) of {{ fetch.title }}"},
            "capture_as": "reviews",
        },
        {"id": "lint", "call": "k.echo", "input_template": {"text": "lint {{ fetch.title }}"}, "capture_as": "lint"},
        {
            "id": "fix_lint",
            "call": "local.read",
            "when": "lint.offenses > 0",
            "input_template": {"path": "{{ lint.messages[0] }}"},
            "capture_as": "fixed",
        },
        {"id": "deep_scan", "call": "k.echo", "when": "params.deep", "input_template": {"text": "deep"}},
    ]
    produced = ["fetch", "lint", "fixed"]
    for i in range(6, 19):
        refs = rng.sample(produced, min(2, len(produced)))
        step: dict[str, Any] = {
            "id": f"s{i}",
            "call": rng.choice(CALLS),
            "input_template": {
                "text": f"step {i}: "
                + " / ".join(f"{{{{ {r}.title | default({r}.value | default('')) }}}}" for r in refs)
            },
            "capture_as": f"s{i}",
            "rationale": f"Step {i} builds on {', '.join(refs)}.",
        }
        if rng.random() < 0.3:
            step["when"] = f"{refs[0]}.ok | default(true)"
        steps.append(step)
        produced.append(f"s{i}")
    steps.append(
        {
            "id": "summary",
            "call": "prompt.say",
            "input_template": {"text": "{{ reviews | length }} files reviewed, {{ lint.offenses }} lint offenses"},
        }
    )
    assert len(steps) == 20
    return {
        "name": LOOP,
        "version": "1",
        "inputs": {"target": {"type": "string", "required": True}, "deep": {"type": "boolean", "default": False}},
        # The gateway's size guard counts an answer's text and structured content (think sends both): with the
        # default 20,000-byte context budget a late instruction (~10 KB) would be spilled to a preview.
        "limits": {"max_context_bytes": 6000},
        "steps": steps,
    }


GUARD_WORKFLOW: dict[str, Any] = {
    "name": GUARD,
    "version": "1",
    "steps": [
        {"id": "big", "call": "k.echo", "input_template": {"text": "give me a big result"}, "capture_as": "big"},
        {"id": "after", "call": "prompt.say", "input_template": {"text": "{{ big.kind | default('?') }}"}},
    ],
}


def text(rng: random.Random, n_bytes: int) -> str:
    out: list[str] = []
    size = 0
    while size < n_bytes:
        word = rng.choice(WORDS)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)[:n_bytes]


def snapshot_of_size(n_bytes: int, seed: int = 1) -> dict[str, Any]:
    """A review-like result (findings, a diff) of exactly `n_bytes` as compact JSON; a tiny one for 0."""
    if n_bytes == 0:
        return {"kind": "tiny", "ok": True}
    rng = random.Random(seed)
    findings = [
        {"file": f"app/part_{i}.py", "line": rng.randint(1, 900), "severity": "minor", "message": text(rng, 120)}
        for i in range(n_bytes // 2000)
    ]
    body: dict[str, Any] = {"kind": "review", "findings": findings, "diff": ""}
    missing = n_bytes - len(to_json(body))
    body["diff"] = text(rng, missing)
    while len(to_json(body)) < n_bytes:
        body["diff"] += "x"
    assert len(to_json(body)) == n_bytes, len(to_json(body))
    return body


def result_for(answer: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """What a client would report for the instruction's step (~1 KB)."""
    base = answer["step_id"].split("[")[0]
    if base == "__driver_bootstrap":
        return {"version": answer["input"]["version"], "hash": "sha256:" + "0" * 64}
    if base == "fetch":
        return {"title": "Fix the cache eviction", "count": 3, "body": text(rng, 900)}
    if base == "list_files":
        return {"items": ["gateway/cache.py", "gateway/session.py", "tests/test_cache.py"]}
    if base == "review_file":
        findings = [{"line": rng.randint(1, 400), "message": text(rng, 150)} for _ in range(4)]
        return {"path": answer["input"]["text"].split()[1], "findings": findings}
    if base == "lint":
        return {"offenses": 2, "messages": ["gateway/cache.py:12 E501", "gateway/cache.py:40 F401"]}
    if answer["call"] == "prompt.say":
        return {"message": answer["input"]["text"], "display": True}
    return {"ok": True, "value": answer["step_id"], "text": text(rng, 900)}


async def run_once(call: Call, run_id: str, rng: random.Random, plans: list[float], nexts: list[float]) -> int:
    """One full run of the loop workflow; appends latencies (ms); returns the number of next calls."""
    started = time.perf_counter()
    answer = await call("think.plan", {"workflow": LOOP, "params": {"target": "MR !42"}, "run_id": run_id})
    plans.append((time.perf_counter() - started) * 1000)
    count = 0
    while not answer.get("done"):
        args = {"workflow": LOOP, "run_id": run_id, "step_id": answer["step_id"]}
        snapshot = result_for(answer, rng)
        started = time.perf_counter()
        answer = await call("think.next", {**args, "result_snapshot": snapshot})
        nexts.append((time.perf_counter() - started) * 1000)
        count += 1
    assert "skipped" in answer["summary"] and answer["progress"]["done"] == answer["progress"]["total"], answer
    return count


def engine_caller(engine: Engine) -> Call:
    async def call(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        if tool == "think.plan":
            return await engine.plan(OWNER, args["workflow"], args.get("params"), args.get("run_id"))
        return await engine.next(
            OWNER, args["workflow"], args.get("run_id"), args["step_id"], args.get("result_snapshot")
        )

    return call


def client_caller(client: Client) -> Call:
    async def call(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        result = await client.call_tool(tool, args)
        if result.is_error:
            raise RuntimeError(f"{tool} failed: {result.content}")
        if result.structured_content is not None:
            return dict(result.structured_content)
        texts = [b.text for b in result.content if isinstance(b, types.TextContent) and b.text.startswith("{")]
        body: dict[str, Any] = json.loads(texts[-1])
        return body

    return call


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def row(path: str, op: str, values: list[float]) -> str:
    return (
        f"{path:<9} {op:<6} {len(values):>6} {percentile(values, 0.5):>8.2f} {percentile(values, 0.99):>8.2f}"
        f" {statistics.fmean(values):>8.2f}"
    )


async def engine_runs(engine: Engine, runs: int, seed: int) -> tuple[list[float], list[float], int]:
    rng = random.Random(seed)
    plans: list[float] = []
    nexts: list[float] = []
    per_run = 0
    for n in range(runs):
        per_run = await run_once(engine_caller(engine), f"engine{n}", rng, plans, nexts)
    return plans, nexts, per_run


async def gateway_runs(tmp: Path, workflows: Path, runs: int, seed: int) -> tuple[list[float], list[float]]:
    config = write_config(tmp, {}, think={"workflows_dirs": [str(workflows)], "state_dir": str(tmp / "gw-state")})
    gateway = Gateway(load_config(config), in_process={"k": lambda: Kitchen("k", None, 0, []).server})
    rng = random.Random(seed)
    plans: list[float] = []
    nexts: list[float] = []
    async with gateway.running(), Client(gateway.front.server, mode="legacy") as client:
        call = client_caller(client)
        await run_once(call, "warmup", rng, [], [])  # first-result driver hint, catalog listing
        for n in range(runs):
            await run_once(call, f"gateway{n}", rng, plans, nexts)
    return plans, nexts


async def guard_runs(engine: Engine, runs: int) -> dict[str, tuple[list[float], dict[str, Any]]]:
    """`engine.next` of the `big` step with each snapshot size, each time on a fresh run."""
    out: dict[str, tuple[list[float], dict[str, Any]]] = {}
    for label, size in SNAPSHOTS:
        snapshot = snapshot_of_size(size)
        times: list[float] = []
        info: dict[str, Any] = {}
        for n in range(runs + 3):  # the first 3 are warm-up
            run_id = f"guard-{label.replace(' ', '')}-{n}"
            answer = await engine.plan(OWNER, GUARD, {}, run_id)
            while answer["step_id"] != "big":
                answer = await engine.next(
                    OWNER, GUARD, run_id, answer["step_id"], result_for(answer, random.Random(n))
                )
            started = time.perf_counter()
            answer = await engine.next(OWNER, GUARD, run_id, "big", snapshot)
            elapsed = (time.perf_counter() - started) * 1000
            assert answer["step_id"] == "after", answer
            if n >= 3:
                times.append(elapsed)
            state = await engine.store.load(OWNER, GUARD, run_id)
            [guarded] = [h for h in state.history if h.event == "snapshot" and h.step_id == "big"]
            info = {
                "stored": len(to_json(state.captures["big"]["content"])),
                "truncated": guarded.detail == "truncated",
            }
        out[label] = (times, info)
    return out


async def main(runs: int, guard: int, seed: int) -> None:
    with tempfile.TemporaryDirectory(prefix="think-loop-") as name:
        tmp = Path(name)
        workflows = tmp / "workflows"
        workflows.mkdir()
        (workflows / f"{LOOP}.yaml").write_text(yaml.safe_dump(loop_workflow(seed), sort_keys=False), "utf-8")
        (workflows / f"{GUARD}.yaml").write_text(yaml.safe_dump(GUARD_WORKFLOW, sort_keys=False), "utf-8")

        async def known_tools() -> frozenset[str]:
            return frozenset(TOOLS)

        engine = Engine(
            Library([workflows]),
            StateStore(*local_runs(tmp / "state")),
            PromptLibrary(),
            schemas=Schemas([]),
            known_tools=known_tools,
        )
        await run_once(engine_caller(engine), "warmup", random.Random(seed), [], [])
        e_plans, e_nexts, per_run = await engine_runs(engine, runs, seed)
        g_plans, g_nexts = await gateway_runs(tmp, workflows, runs, seed)
        sizes = sorted(p.stat().st_size for p in (tmp / "state" / owned(OWNER, LOOP)).glob("engine*.json"))

        print(f"Think loop: 20-step workflow, 1 plan + {per_run} next per run, {runs} runs per path")
        print(f"(final state file {sizes[len(sizes) // 2] / 1024:.0f} KB; every save fsyncs file and folder)")
        print()
        print(f"{'path':<9} {'op':<6} {'calls':>6} {'p50 ms':>8} {'p99 ms':>8} {'mean ms':>8}")
        print(row("engine", "plan", e_plans))
        print(row("engine", "next", e_nexts))
        print(row("gateway", "plan", g_plans))
        print(row("gateway", "next", g_nexts))

        results = await guard_runs(engine, guard)
        print()
        print(f"think.next of one step by snapshot size (Engine, fresh run each time, {guard} runs)")
        print(f"{'snapshot':<9} {'bytes':>7} {'stored':>7} {'truncated':>9} {'p50 ms':>8} {'p99 ms':>8}")
        for label, size in SNAPSHOTS:
            times, info = results[label]
            truncated = "yes" if info["truncated"] else "no"
            sent = len(to_json(snapshot_of_size(size)))
            print(
                f"{label:<9} {sent:>7} {info['stored']:>7} {truncated:>9} {percentile(times, 0.5):>8.2f}"
                f" {percentile(times, 0.99):>8.2f}"
            )
        base = results["tiny"][0]
        for label in ("50 KB", "60 KB"):
            times = results[label][0]
            p50 = percentile(times, 0.5) - percentile(base, 0.5)
            p99 = percentile(times, 0.99) - percentile(base, 0.99)
            verdict = "PASS" if p50 < TARGET_MS else "MISS"
            print(f"overhead of {label} over tiny: p50 {p50:.2f} ms, p99 {p99:.2f} ms (target < {TARGET_MS:.0f} ms)")
            if label == "50 KB":
                print(f"target (50 KB snapshot adds < {TARGET_MS:.0f} ms to think.next, p50): {verdict}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--guard-runs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=7)
    opts = parser.parse_args()
    anyio.run(main, opts.runs, opts.guard_runs, opts.seed)
