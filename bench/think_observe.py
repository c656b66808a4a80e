"""Observe's per-call cost: a tool call in a session with an active Think run vs the same call in a session
without one, through one in-process gateway, interleaved call by call so the machine's noise falls on both.

Usage, from the repository root: `.venv/bin/python -m bench.think_observe [--calls 2000]`.

The run waits for `k.echo {"text": "wait"}`; the measured call is `k.echo {"text": "hi"}`: the tool's name
matches a ready step, its arguments do not (the worst case that still records nothing). Rows:
- `no run`: the session has no Think run (Observe has nothing to look at);
- `active run`: Observe answers from the engine's in-memory index of ready steps (this code);
- `active run, cold index`: the index is emptied before every call, so each call reads the run from the
  store as every call did before the index (≈ the old cost: one load and parse of the run file).
Target: `active run` within noise of `no run` (ratio ≈ 1.0): PASS when its p50 is within 10 %.
"""

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio
from mcp import Client

from bench._harness import echo_once, table
from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.session import os_user
from tests.harness import write_config
from tests.servers.kitchen import Kitchen

WORKFLOW = """
name: bench_observe
version: "1"
steps:
  - id: wait
    call: k.echo
    input_template: {text: "wait"}
"""
DRIVER = {"version": "stable-2025-11", "text": "the driver"}
TARGET = 1.10
OWNER = os_user().owner
"""The bench's client is the stdio front's: its runs are the OS user's."""


async def plan(client: Client) -> str:
    """A run of bench_observe in this client's session, past its driver steps: it waits for k.echo "wait"."""
    result = await client.call_tool("think.plan", {"workflow": "bench_observe", "run_id": "bench"})
    ins = result.structured_content or {}
    while str(ins.get("step_id", "")).startswith("__driver"):
        args = {"workflow": "bench_observe", "run_id": "bench", "step_id": ins["step_id"], "result_snapshot": DRIVER}
        ins = (await client.call_tool("think.next", args)).structured_content or {}
    if ins.get("step_id") != "wait":
        raise RuntimeError(f"the run is not waiting for k.echo: {ins}")
    return str(ins["run_id"])


async def measure(calls: int) -> None:
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        (tmp / "workflows").mkdir()
        (tmp / "workflows" / "bench_observe.yaml").write_text(WORKFLOW)
        think = {"workflows_dirs": [str(tmp / "workflows")], "state_dir": str(tmp / "state")}
        gateway = Gateway(
            load_config(write_config(tmp, {}, think=think)),
            in_process={"k": lambda: Kitchen("k", None, 0, []).server},
        )
        engine = gateway.engine
        assert engine is not None
        async with (
            gateway.running(),
            Client(gateway.front.server, mode="legacy") as idle,
            Client(gateway.front.server, mode="legacy") as busy,
        ):
            await plan(busy)

            def cold() -> None:
                engine.runs.ready.forget(OWNER, "bench_observe", "bench")

            sides: list[tuple[str, Client, Callable[[], None] | None]] = [
                ("no run", idle, None),
                ("active run", busy, None),
                ("active run, cold index", busy, cold),
            ]
            times: dict[str, list[float]] = {name: [] for name, _, _ in sides}
            for _ in range(50):  # warm up every path
                for _, client, before in sides:
                    if before is not None:
                        before()
                    await echo_once(client, "k.echo")
            for i in range(calls):
                for name, client, before in sides[i % 3 :] + sides[: i % 3]:  # rotate who goes first
                    if before is not None:
                        before()
                    times[name].append(await echo_once(client, "k.echo"))
    base = statistics.median(times["no run"])
    rows = []
    for name, values in times.items():
        p50 = statistics.median(values)
        rows.append([name, f"{p50 * 1e6:,.0f}", f"{statistics.mean(values) * 1e6:,.0f}", f"{p50 / base:.2f}"])
    print(f"k.echo through an in-process gateway, {calls} calls per row, interleaved")
    table(["session", "p50 µs", "mean µs", "× no run"], rows, right={1, 2, 3})
    ratio = statistics.median(times["active run"]) / base
    print(f"active run vs no run: {ratio:.2f} (target ≤ {TARGET:.2f}): {'PASS' if ratio <= TARGET else 'MISS'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    started = time.perf_counter()
    anyio.run(measure, parser.parse_args().calls)
    print(f"({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
