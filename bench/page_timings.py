"""How long each page of `/ui` takes to answer with a full call log: a `gateway serve --http` (the kitchen server, a
policy rule, Think's fixture workflows) after 500 tool calls by three identities (echoes, measures, spilled blobs,
failing and refused calls, a Think run; alice keeps her arguments), then every page asked for in turn, `--rounds`
times, as alice (an admin: she sees every call, the largest view). Timed over loopback with a kept-alive connection:
the server's time plus well under a millisecond of HTTP; beside it the gateway process's CPU per answer (mean), which
the machine's load barely changes (wall times on a loaded machine include waiting for a core). The target (issue
36): no page over 100 ms.

Usage: `.venv/bin/python -m bench.page_timings [--calls 500] [--rounds 40] [--redis URL]`
"""

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import psutil
from mcp import Client

from bench._harness import cpu_seconds, descendants, started_since, table
from tests.harness import http_client, http_gateway, kitchen, write_config
from tests.system.test_page_browser import think_run
from tests.think.harness import FIXTURES

TOKENS = {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789", "carol": "carol-token-0123456789"}
TARGET_MS = 100.0


def config(folder: Path, redis: str | None) -> Path:
    tokens = [
        {"name": "alice", "token": TOKENS["alice"], "groups": ["ops"]},
        {"name": "bob", "token": TOKENS["bob"], "groups": ["dev"]},
        {"name": "carol", "token": TOKENS["carol"], "groups": ["dev"]},
    ]
    store = {"backend": "redis", "url": redis, "prefix": f"bench{time.time_ns()}:"} if redis else {}
    return write_config(
        folder,
        {"k": kitchen("k")},
        auth={"tokens": tokens, "admin_groups": ["ops"]},
        policy={"rules": [{"name": "no-boom-for-devs", "groups": ["dev"], "deny": ["k.boom"]}]},
        limits={"max_inline_bytes": 2000, "outputs_dir": str(folder / "outputs")},
        think={"state_dir": str(folder / "think"), "workflows_dirs": [str(FIXTURES)]},
        store=store,
    )


async def one_call(client: Client, n: int) -> None:
    """The n-th call of the mix: mostly echoes and measures, every 10th a spilled blob, every 7th a failing or
    refused k.boom, every 13th an unknown tool."""
    if n % 13 == 0:
        await client.call_tool("k.nope", {})
    elif n % 10 == 0:
        await client.call_tool("k.blob", {"n": 30_000})
    elif n % 7 == 0:
        await client.call_tool("k.boom", {})
    elif n % 2:
        await client.call_tool("k.echo", {"text": f"call {n} " + "words " * (n % 40), "api_token": "t0k"})
    else:
        await client.call_tool("k.measure", {"text": "x" * (n % 500), "options": {"depth": n % 5}})


async def recorded(base: str, calls: int) -> None:
    """`calls` calls shared among the three identities, and alice's Think run; alice keeps her arguments."""
    async with httpx2.AsyncClient(headers={"authorization": f"Bearer {TOKENS['alice']}"}) as http:
        chosen = await http.post(f"{base}/ui/arguments", data={"keep": "on"})
        assert chosen.status_code == 303, chosen.text
    names = list(TOKENS)
    for who in names:
        async with http_client(base, headers={"authorization": f"Bearer {TOKENS[who]}"}) as client:
            if who == "alice":
                await think_run(client)
            for n in range(names.index(who), calls, len(names)):
                await one_call(client, n)


async def timed(base: str, rounds: int, gateway: psutil.Process | None) -> dict[str, tuple[list[float], float]]:
    """Milliseconds per answer of each page, asked for in turn (a round asks each once), and the gateway process's
    CPU milliseconds per answer."""
    async with httpx2.AsyncClient(headers={"authorization": f"Bearer {TOKENS['alice']}"}, timeout=60) as http:
        listed = (await http.get(f"{base}/ui/calls.json")).json()
        ref, run = listed[len(listed) // 2]["ref"], None
        think = (await http.get(f"{base}/ui/think")).text
        found = think.split('href="/ui/think/loop_v1/', 1)
        run = found[1].split('"', 1)[0] if len(found) > 1 else None
        pages = {
            "servers": "/ui",
            "catalog": "/ui/catalog",
            "catalog search": "/ui/catalog?q=return+the+text",
            "calls": "/ui/calls",
            "calls, filtered": "/ui/calls?outcome=refused&q=boom",
            "calls, page 5": "/ui/calls?page=5",
            "calls, live part": "/ui/calls",
            "call detail": f"/ui/calls/{ref}",
            "metrics": "/ui/metrics",
            "think": "/ui/think",
            **({"think run": f"/ui/think/loop_v1/{run}"} if run else {}),
            "try form": "/ui/try/k.echo",
            "export CSV": "/ui/calls.csv",
            "export JSON": "/ui/calls.json",
        }
        times: dict[str, list[float]] = {name: [] for name in pages}
        cpu = dict.fromkeys(pages, 0.0)
        for _ in range(rounds):
            for name, path in pages.items():
                part = {"x-page-part": "main"} if name == "calls, live part" else {}
                used, start = cpu_seconds(gateway), time.perf_counter()
                answer = await http.get(base + path, headers=part)
                times[name].append((time.perf_counter() - start) * 1000)
                cpu[name] += cpu_seconds(gateway) - used
                if answer.status_code != 200:
                    raise RuntimeError(f"{path} answered {answer.status_code}: {answer.text[:200]}")
        return {name: (ms, cpu[name] * 1000 / rounds) for name, ms in times.items()}


async def main(opts: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as name:
        before = descendants()
        async with http_gateway(config(Path(name), opts.redis)) as base:
            gateway = started_since(before)
            await recorded(base, opts.calls)
            times = await timed(base, opts.rounds, gateway)
    rows: list[Any] = []
    for page, (ms, cpu) in times.items():
        median, worst = statistics.median(ms), max(ms)
        rows.append([page, f"{median:.1f}", f"{worst:.1f}", f"{cpu:.1f}", "PASS" if worst <= TARGET_MS else "MISS"])
    print(f"{opts.calls} calls recorded; {opts.rounds} requests per page; {'redis' if opts.redis else 'local'} store")
    print(f"load average {' / '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    table(["page", "median ms", "max ms", "CPU ms", f"max <= {TARGET_MS:.0f} ms"], rows, right={1, 2, 3})


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--redis", default=None, help="a Redis URL: the store on Redis instead of local")
    anyio.run(main, parser.parse_args())
