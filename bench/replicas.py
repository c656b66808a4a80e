"""Scale-out: three gateway replicas on Redis behind HAProxy vs one replica on the local backend; Think plan/next on
Redis vs local; a config reload under load.

Usage, from the repository root: `.venv/bin/python -m bench.replicas [--calls 300] [--rounds 3] [--runs 30]`.

1. Echo (`kitchen.echo`, a stdio kitchen server behind each replica) over Streamable HTTP, 2026-era clients: p50 of
   sequential calls, and calls/s with 16 concurrent callers (4 clients x 4), one replica (local backend, no
   balancer) and three (Redis backend, HAProxy round-robin) interleaved round by round. Targets: p50 <= 1.15x,
   calls/s >= 2x. On a 2-core machine the three replicas, their servers, Redis, HAProxy and this client share
   two cores: the calls/s figure there measures the machine, not the design. So the CPU each kind of process
   spent per call during the calls/s measure is printed too (gateways, their stdio servers, HAProxy, Redis, this
   load generator): one replica is bound by its own core, three by what all of them together cost on two.
2. `engine.plan` + `engine.next` over a 10-step client-side workflow, state on local files (fsync) vs Redis.
3. Reload under load: 8 callers echo through one replica while its config gains a server and changes the
   kitchen's definition (so it is restarted); failed calls (target 0) and the time from the write of the file until
   a call to the new server succeeds (target ≤ 2 s), via `POST /reload` and via the file watcher; beside it, the
   gateway's own timings of that reload (`/healthz` `last_reload`): validated, the slowest new server up (its process
   started and initialized), the new catalog listed. What the gateway did not time is the watcher's latency and the
   test call.
"""

import argparse
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import httpx2
import psutil
import yaml
from mcp import Client, StdioServerParameters

from bench._harness import cpu_seconds, echo_once, percentile, table, throughput
from gateway.hosted.prompts import PromptLibrary
from gateway.store.backends import open_stores
from gateway.think.engine import Engine
from gateway.think.library import Library
from gateway.think.state import StateStore
from gateway.think.validator import Schemas
from tests.deployment import Deployment, Replica, deployment, replica_config
from tests.harness import KITCHEN, PYTHON, free_port, http_client, kitchen
from tests.services import store_config

STEPS = 10
OWNER = "bench"


def workflow() -> str:
    steps = [
        {"id": f"s{i}", "call": "local.note", "input_template": {"i": i}, "capture_as": f"c{i}"} for i in range(STEPS)
    ]
    return yaml.safe_dump({"name": "bench_v1", "version": "1", "description": "bench", "steps": steps})


@asynccontextmanager
async def clients(url: str, n: int) -> AsyncIterator[list[Client]]:
    async with AsyncExitStack() as stack:
        yield [await stack.enter_async_context(http_client(url)) for _ in range(n)]


ROLES = ("gateway", "servers", "haproxy", "redis", "load generator")


def role(proc: psutil.Process) -> str:
    name: str = proc.name()
    if name.startswith(("haproxy", "redis")):
        return name.removesuffix("-server")
    return "gateway" if "gateway serve" in " ".join(proc.cmdline()) else "servers"


def cpu_by_role() -> dict[str, float]:
    """CPU seconds used so far by this process (the load generator) and by each kind of process it started."""
    me = psutil.Process()
    totals = dict.fromkeys(ROLES, 0.0)
    totals["load generator"] = cpu_seconds(me)
    for proc in me.children(recursive=True):
        with suppress(psutil.Error):  # a process may end between the listing and the reading
            totals[role(proc)] += cpu_seconds(proc)
    return totals


async def echo_side(url: str, calls: int) -> tuple[float, float, dict[str, float]]:
    """(p50 ms of sequential calls, calls/s with 4 clients x 4 callers, CPU ms per call of those by role)."""
    async with clients(url, 4) as group:
        for client in group:
            await echo_once(client, "kitchen.echo")  # warm
        times = [await echo_once(group[0], "kitchen.echo") for _ in range(calls)]
        started, cpu = time.perf_counter(), cpu_by_role()
        async with anyio.create_task_group() as tg:
            for client in group:
                tg.start_soon(throughput, client, "kitchen.echo", calls, 4)
        rate = 4 * calls / (time.perf_counter() - started)
        spent = {k: (v - cpu[k]) * 1000 / (4 * calls) for k, v in cpu_by_role().items()}
    return (percentile(times, 0.5) or 0) * 1000, rate, spent


async def part_echo(folder: Path, deploy: Deployment, calls: int, rounds: int) -> None:
    single = Replica(folder / "single", free_port())
    (folder / "single-config").mkdir()
    config = replica_config(folder / "single-config", "", store={"backend": "local"})
    one = Deployment(folder, config, deploy.redis, [single])  # its config uses the local backend
    await anyio.to_thread.run_sync(one.restart, single)
    results: dict[str, list[tuple[float, float, dict[str, float]]]] = {
        "1 replica, local": [],
        "3 replicas, Redis, HAProxy": [],
    }
    try:
        for _ in range(rounds):
            results["1 replica, local"].append(await echo_side(single.url, calls))
            results["3 replicas, Redis, HAProxy"].append(await echo_side(deploy.balancer, calls))
    finally:
        await anyio.to_thread.run_sync(one.stop, single)
    rows, base = [], None
    for label, values in results.items():
        p50, rate = statistics.median(v[0] for v in values), statistics.median(v[1] for v in values)
        base = base or (p50, rate)
        rows.append([label, f"{p50:.2f}", f"{p50 / base[0]:.2f}×", f"{rate:.0f}", f"{rate / base[1]:.2f}×"])
    print(f"\nEcho over HTTP ({calls} calls per measure, median of {rounds} interleaved rounds)")
    table(["side", "p50 ms", "p50 ratio", "calls/s ×16", "calls/s ratio"], rows, {1, 2, 3, 4})
    print(
        "\nCPU ms per call during calls/s, by process kind (median of the rounds; the idle side's processes count too)"
    )
    cpu = [
        [label, *(f"{statistics.median(v[2][r] for v in values):.2f}" for r in ROLES)]
        for label, values in results.items()
    ]
    for row, values in zip(cpu, results.values(), strict=True):
        row.append(f"{statistics.median(sum(v[2].values()) for v in values):.2f}")
    table(["side", *ROLES, "total"], cpu, set(range(1, len(ROLES) + 2)))


async def think_side(store: StateStore, folder: Path, runs: int) -> tuple[list[float], list[float]]:
    engine = Engine(Library([folder]), store, PromptLibrary(), schemas=Schemas([]))
    plans, nexts = [], []
    for n in range(runs):
        started = time.perf_counter()
        answer = await engine.plan(OWNER, "bench_v1", {}, f"r{n}-{time.time_ns()}")
        plans.append(time.perf_counter() - started)
        run = answer["run_id"]
        while not answer.get("done"):
            snapshot: Any = (
                {"version": "stable-2025-11", "text": "d"}
                if answer["step_id"] == "__driver_bootstrap"
                else {"ok": True}
            )
            started = time.perf_counter()
            answer = await engine.next(OWNER, "bench_v1", run, answer["step_id"], snapshot)
            nexts.append(time.perf_counter() - started)
    return plans, nexts


async def part_think(folder: Path, redis_url: str, runs: int) -> None:
    (folder / "wf").mkdir(exist_ok=True)
    (folder / "wf" / "bench_v1.yaml").write_text(workflow(), encoding="utf-8")
    sides = {}
    for backend in ("local", "redis"):
        stores = open_stores(store_config(backend, redis_url, "bench:", folder / backend))
        sides[backend] = (StateStore(stores.runs, stores.spills), stores)
    times: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in sides}
    for _ in range(3):  # interleaved
        for backend, (store, _) in sides.items():
            plans, nexts = await think_side(store, folder / "wf", runs)
            times[backend][0].extend(plans)
            times[backend][1].extend(nexts)
    for _, stores in sides.values():
        await stores.aclose()
    rows = []
    for backend, (plans, nexts) in times.items():
        rows.append(
            [
                backend,
                f"{(percentile(plans, 0.5) or 0) * 1000:.2f}",
                f"{(percentile(nexts, 0.5) or 0) * 1000:.2f}",
                f"{(percentile(nexts, 0.99) or 0) * 1000:.2f}",
            ]
        )
    print(f"\nThink on the store ({3 * runs} runs of {STEPS + 2} steps per backend, interleaved)")
    table(["backend", "plan p50 ms", "next p50 ms", "next p99 ms"], rows, {1, 2, 3})


async def cold_start() -> float:
    """Seconds until the test server, started alone with no gateway, answers its first call: the part of
    "new server usable" that is the server's own start (interpreter and SDK imports), not the reload's."""
    started = time.perf_counter()
    async with Client(StdioServerParameters(command=PYTHON, args=[KITCHEN, "--name", "cold"])) as client:
        await client.call_tool("echo", {"text": "x"})
    return time.perf_counter() - started


async def reload_round(path: Path, replica: Replica, trigger: str, extra: str, n: int) -> list[str]:
    failed, calls, done = 0, 0, anyio.Event()

    async def load(client: Client) -> None:
        nonlocal failed, calls
        while not done.is_set():
            try:
                failed += bool((await client.call_tool("k.echo", {"text": "hi"})).is_error)
            except Exception:  # noqa: BLE001 -- a failed call is what this counts
                failed += 1
            calls += 1

    async with clients(replica.url, 8) as group, anyio.create_task_group() as tg:
        for client in group:
            tg.start_soon(load, client)
        await anyio.sleep(1)
        servers = {"k": kitchen("k", timeout_s=30 + n), extra: kitchen(extra)}  # k restarted, `extra` added
        await anyio.Path(path).write_text(yaml.safe_dump({"servers": servers}), encoding="utf-8")
        started = time.perf_counter()
        async with httpx2.AsyncClient() as http:
            answers: list[Any] = []

            async def post() -> None:
                answers.append((await http.post(f"{replica.url}/reload", timeout=60)).json())

            async with anyio.create_task_group() as posting:
                if trigger == "POST /reload":
                    # The answer comes once every new server is up; the new one may take calls before that.
                    posting.start_soon(post)
                while (await group[0].call_tool(f"{extra}.echo", {"text": "x"})).is_error:  # noqa: ASYNC110
                    await anyio.sleep(0.02)  # another process: no event to wait on
                usable = time.perf_counter() - started
            if answers:  # the watcher (a stat every 0.25 s) may have seen the write first: then the POST did nothing
                trigger += "" if answers[0]["added"] else " (the watcher was first)"
            else:  # the watcher's reload: its report is the last one
                answers.append((await http.get(f"{replica.url}/healthz")).json()["last_reload"])
            answer = answers[0]
        cold = await cold_start()  # under the same load, so the two figures compare
        await anyio.sleep(1)
        done.set()
    # Dashes when the reload answered was a second one that found nothing left to do.
    timings = [answer["timings"].get(k) for k in ("validated", f"up:{extra}", "listed")]
    verdict = "PASS" if failed == 0 and usable <= 2 else "MISS"
    return [
        trigger,
        str(calls),
        str(failed),
        f"{usable:.2f}",
        f"{cold:.2f}",
        f"{usable - cold:.2f}",
        *("–" if t is None else f"{t:.2f}" for t in timings),
        verdict,
    ]


async def part_reload(folder: Path, deploy: Deployment) -> None:
    path = folder / "gateway.yaml"
    path.write_text(yaml.safe_dump({"servers": {"k": kitchen("k")}}), encoding="utf-8")
    replica = Replica(folder / "r", free_port())
    one = Deployment(folder, path, deploy.redis)  # its config has no store section: the local backend
    await anyio.to_thread.run_sync(one.restart, replica)
    try:
        rows = [
            await reload_round(path, replica, "POST /reload", "n1", 1),
            await reload_round(path, replica, "file watch", "n2", 2),
        ]
    finally:
        await anyio.to_thread.run_sync(one.stop, replica)
    print("\nReload under load (8 callers; the kitchen restarted, a server added)")
    gateway = ["validated s", "new server up s", "listed s"]
    own = ["server's own cold start s", "the rest s"]
    table(["trigger", "calls", "failed", "new server usable after s", *own, *gateway, "target"], rows, set(range(1, 9)))


async def main(calls: int, rounds: int, runs: int, parts: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "workflows").mkdir()
        with deployment(folder) as deploy:
            if "echo" in parts:
                await part_echo(folder, deploy, calls, rounds)
            if "think" in parts:
                await part_think(folder, deploy.redis.url, runs)
            if "reload" in parts:
                (folder / "reload").mkdir()
                await part_reload(folder / "reload", deploy)
    print("\nNote: everything above shares this machine's cores; ratios are comparable, absolute figures are not.")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--parts", default="echo,think,reload", help="comma-separated: echo, think, reload")
    args = parser.parse_args()
    anyio.run(main, args.calls, args.rounds, args.runs, [p.strip() for p in str(args.parts).split(",")])
