"""bench.pipeline_cost, small calls: kitchen direct vs in-process gateways (empty and full chain) vs stdio fronts."""

import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path

from mcp import Client

from bench._harness import percentile, table
from bench._pipeline_setup import TARGET, empty_chain_stdio, first_text, realistic_config
from bench._processes import (
    TIMEOUT_S,
    gateway_stdio,
    kitchen_stdio,
    linear,
)
from gateway.app.gateway import Gateway
from gateway.config import load_config
from tests.harness import hints_of


@dataclass
class Lane:
    label: str
    client: Client
    tool: str
    latencies: list[float] = field(default_factory=list[float])
    hints: int = 0
    """Gateway hint blocks on a steady-state echo result (after the warm-up)."""


async def echo(lane: Lane) -> float:
    start = time.perf_counter()
    result = await lane.client.call_tool(lane.tool, {"text": "hi"})
    elapsed = time.perf_counter() - start
    if result.is_error or first_text(result) != "hi":
        raise RuntimeError(f"{lane.label}: {lane.tool} answered {result.content!r}")
    lane.hints = len(hints_of(result))
    return elapsed


async def interleaved(lanes: list[Lane], calls: int, warmup: int) -> None:
    """Warm up every lane, then call them in turn (order reversed every round) `calls` times each."""
    for _ in range(warmup):
        for lane in lanes:
            await echo(lane)
    for i in range(calls):
        for lane in lanes if i % 2 == 0 else lanes[::-1]:
            lane.latencies.append(await echo(lane))


def ms(lane: Lane | None, q: float) -> float | None:
    if lane is None:
        return None
    p = percentile(lane.latencies, q)
    return None if p is None else p * 1e3


def fmt(value: float | None, spec: str = "{:.3f}") -> str:
    return "—" if value is None else spec.format(value)


def ratio(a: float | None, b: float | None) -> str:
    return "—" if a is None or b is None or b == 0 else f"{a / b:.2f}×"


@dataclass
class Small:
    direct: Lane | None = None
    empty: Lane | None = None
    full: Lane | None = None
    stdio_empty: Lane | None = None
    stdio_full: Lane | None = None
    notes: list[str] = field(default_factory=list[str])

    @property
    def verdict(self) -> bool | None:
        full, empty = ms(self.full, 0.5), ms(self.empty, 0.5)
        return None if full is None or empty is None else full <= TARGET * empty

    def print(self) -> None:
        direct = ms(self.direct, 0.5)
        rows: list[list[str]] = []
        entries = [
            ("(a) direct: kitchen over stdio (linear transport)", self.direct, None, "", None),
            ("(b) in-process gateway, empty chain", self.empty, None, "", None),
            ("(c) in-process gateway, full default chain", self.full, self.empty, f"≤ {TARGET:g}× (b)", self.verdict),
            ("(b') stdio front gateway, empty chain", self.stdio_empty, None, "", None),
            ("(c') stdio front gateway, full default chain", self.stdio_full, self.stdio_empty, "vs (b')", None),
        ]
        for label, lane, base, target, ok in entries:
            p50 = ms(lane, 0.5)
            verdict = "" if ok is None else ("PASS" if ok else "MISS")
            rows.append(
                [
                    label,
                    fmt(p50),
                    fmt(ms(lane, 0.99)),
                    ratio(p50, direct),
                    ratio(p50, ms(base, 0.5)) if base is not None else "",
                    target,
                    verdict,
                ]
            )
        table(("echo {text: hi}", "p50 ms", "p99 ms", "p50/(a)", "p50/empty", "target", ""), rows, {1, 2, 3, 4})


async def small_calls(tmp: Path, calls: int, warmup: int, out: Small) -> None:
    print(f"[small calls] in process: (a) direct, (b) empty chain, (c) full chain; {calls} calls each", flush=True)
    async with AsyncExitStack() as stack:
        direct = await stack.enter_async_context(
            Client(linear(kitchen_stdio("k")), mode="legacy", read_timeout_seconds=TIMEOUT_S)
        )
        lanes = [Lane("(a) direct", direct, "echo")]
        for label, name in (("(b) empty chain", "empty"), ("(c) full chain", "full")):
            config = realistic_config(tmp / f"inproc-{name}")
            gateway = Gateway(load_config(config), chain=[] if name == "empty" else None)
            await stack.enter_async_context(gateway.running())
            client = await stack.enter_async_context(
                Client(gateway.front.server, mode="legacy", read_timeout_seconds=TIMEOUT_S)
            )
            lanes.append(Lane(label, client, "k.echo"))
        await interleaved(lanes, calls, warmup)
        out.direct, out.empty, out.full = lanes
    out.notes.append(
        f"hint blocks on a steady-state echo result: empty chain {lanes[1].hints}, full chain {lanes[2].hints} "
        "(the steering rule; the version check finds no name@version in 'hi'; bootstrap only on the first call)."
    )

    print(f"[small calls] stdio front: (b') empty chain, (c') full chain; {calls} calls each", flush=True)
    async with AsyncExitStack() as stack:
        lanes = []
        for label, name in (("(b') stdio empty", "empty"), ("(c') stdio full", "full")):
            config = realistic_config(tmp / f"stdio-{name}")
            server = empty_chain_stdio(config) if name == "empty" else gateway_stdio(config)
            client = await stack.enter_async_context(
                Client(linear(server), mode="legacy", read_timeout_seconds=TIMEOUT_S)
            )
            lanes.append(Lane(label, client, "k.echo"))
        await interleaved(lanes, calls, warmup)
        out.stdio_empty, out.stdio_full = lanes
