"""Pipeline cost: what the default middleware chain adds to a small call, and what the size guard does with 100 MB.

Usage, from the repository root: `.venv/bin/python -m bench.pipeline_cost [--quick] [--calls 300] [--warmup 30]
[--mb 100] [--request-mb 100]`.

Small calls (`echo {"text": "hi"}`): p50/p99 of (a) kitchen directly over stdio (the project's linear stdio
transport, `adapters.stdio_transport`), (b) an in-process gateway with the empty chain, (c) an in-process
gateway with the full default chain configured realistically (steering rule, file-backed version catalog
checked on arguments and results, bootstrap summary) — both reached through `Client(gateway.front.server)`,
so (c)/(b) is the cost of the pipeline alone (target: at most 1.2 times) — and, for context, (b)/(c) again through the
real stdio front (gateway subprocesses). The paths are called in turn, call by call, so drift of a shared
machine hits all of them alike.

Large payloads through a gateway subprocess (stdio front → kitchen over stdio) with the default size-guard
limits: a 100 MB result (spilled, previewed) and 100 MB of arguments (refused with guidance, not forwarded),
and the same result with pass-through limits; wall time and the gateway's peak RSS. `--quick` is a smoke
run (60 calls, 10 MB). Every process it starts is stopped before it exits.
"""

import argparse
import json
import os
import sys
import tempfile
import time
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp.types as types
from mcp import Client

from bench._harness import MB, PeakRss, kill_leftover_children, percentile, table
from bench._processes import (
    MAX_MESSAGE_BYTES,
    PASS_THROUGH_LIMITS,
    TIMEOUT_S,
    find_gateway,
    gateway_stdio,
    kitchen_stdio,
    linear,
)
from gateway.app import Gateway
from gateway.config import LimitsConfig, StdioServerConfig, load_config
from tests.harness import ROOT, hints_of, kitchen, write_config

TARGET = 1.2
"""Full chain p50 over empty chain p50, in process."""
HANG_TIMEOUT_S = 60.0
"""For the calls that may get no answer at all (a message over max_message_bytes)."""
PING_INTERVAL_S = 0.05
DEFAULTS = LimitsConfig()
CATALOG = {"postgresql": ["14", "15", "16"], "nodejs": ["18", "20", "22"], "bun": ["1.1.34", "1.2"]}
STEERING_TEXT = "Next: if the text names a tool version, check it against the catalog before using it."


# -- configs and processes -----------------------------------------------------------------------


def realistic_config(directory: Path, limits: dict[str, Any] | None = None, events: Path | None = None) -> Path:
    """Kitchen as `k`, a steering rule and a file-backed version check on `k.*`, bootstrap summary."""
    directory.mkdir(parents=True)
    (directory / "versions.json").write_text(json.dumps(CATALOG), encoding="utf-8")
    sections: dict[str, Any] = {
        "steering": {"hints": [{"tools": ["k.*"], "on": "success", "text": STEERING_TEXT}]},
        "versions": {
            "catalogs": {"runtimes": {"source": {"type": "file", "path": "versions.json"}}},
            "checks": [{"catalog": "runtimes", "tools": ["k.*"], "scan": ["arguments", "result"]}],
        },
        "bootstrap": {"mode": "summary"},
    }
    if limits is not None:
        sections["limits"] = limits
    return write_config(directory, {"k": kitchen("k", events=events, timeout_s=TIMEOUT_S)}, **sections)


def empty_chain_stdio(config: Path) -> StdioServerConfig:
    """The stdio front with `chain=[]` (`bench._stdio_gateway`), started like `gateway_stdio` starts `gateway serve`."""
    real = gateway_stdio(config)
    args = ["-m", "bench._stdio_gateway", "--config", str(config), "--chain", "empty", "--log-level", "WARNING"]
    return real.model_copy(update={"args": args})


def first_text(result: types.CallToolResult) -> str:
    first = result.content[0] if result.content else None
    return first.text if isinstance(first, types.TextContent) else ""


# -- small calls ---------------------------------------------------------------------------------


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


# -- large payloads ------------------------------------------------------------------------------


@dataclass
class Big:
    case: str
    payload: int
    wall_s: float | None = None
    peak_rss: int | None = None
    extra_rss: int | None = None
    ping_max_s: float | None = None
    received: str = ""
    expected: bool | None = None
    details: list[str] = field(default_factory=list[str])


def describe_spill(result: types.CallToolResult, n: int, big: Big) -> bool:
    """What a client got instead of an oversized result; True when it is a preview + link + hint."""
    preview = len(first_text(result).encode())
    links = [b for b in result.content if isinstance(b, types.ResourceLink)]
    hints = hints_of(result)
    big.received = (
        f"is_error={bool(result.is_error)}, preview {preview:,} B, link {'yes' if links else 'NO'}, "
        f"{len(hints)} hint(s)"
    )
    if links:
        big.details.append(f"link: {links[0].uri} (size {links[0].size})")
    big.details.extend(f"hint: {h}" for h in hints)
    if preview >= n:
        big.details.append(f"the whole result came back inline ({preview:,} B): NOT spilled")
    return bool(links) and not result.is_error and preview <= DEFAULTS.max_inline_bytes and bool(hints)


def describe_whole(result: types.CallToolResult, n: int, big: Big) -> bool:
    got = len(first_text(result))
    big.received = f"is_error={bool(result.is_error)}, {got:,} chars inline"
    if result.is_error or got != n:
        big.details.append(f"answer: {first_text(result)[:300]!r}")
    return not result.is_error and got == n


def describe_refusal(result: types.CallToolResult, n: int, big: Big, forwarded: int) -> bool:
    text = first_text(result)
    big.received = f"is_error={bool(result.is_error)}, {len(text):,} chars, forwarded to kitchen: {forwarded}×"
    big.details.append(f"answer: {text[:400]}")
    big.details.extend(f"hint: {h}" for h in hints_of(result))
    if n > DEFAULTS.max_request_bytes:
        return bool(result.is_error) and forwarded == 0 and "max_request_bytes" in text
    return not result.is_error and forwarded == 1  # under the limit: forwarded as is


def describe_error(result: types.CallToolResult, n: int, big: Big) -> bool:
    """With max_message_bytes at its default a 100 MB message cannot pass; any prompt error answer is right."""
    text = first_text(result)
    big.received = f"is_error={bool(result.is_error)}, {len(text):,} chars"
    big.details.append(f"answer: {text[:300]!r}")
    big.details.extend(f"hint: {h}" for h in hints_of(result))
    return bool(result.is_error)


async def pinger(client: Client, stop: anyio.Event, worst: list[float]) -> None:
    """`tools/list` on the same session every 50 ms while the big call runs: shows a stalled event loop.

    The gateway answers it from its catalog cache, without the downstream (an echo would wait behind the
    blob in kitchen). It shares the stdio wire with the big message, so a transfer on the wire delays it too.
    """
    while not stop.is_set():
        start = time.perf_counter()
        with suppress(Exception):
            await client.list_tools(cache_mode="bypass")
        worst[0] = max(worst[0], time.perf_counter() - start)
        with anyio.move_on_after(PING_INTERVAL_S):
            await stop.wait()


async def big_call(
    directory: Path,
    case: str,
    limits: dict[str, Any] | None,
    tool: str,
    arguments: dict[str, Any],
    payload: int,
    kind: str,
    timeout_s: float = TIMEOUT_S,
) -> Big:
    """One fresh gateway subprocess (clean RSS baseline), one warm-up echo, then the measured call."""
    print(f"[large] {case}", flush=True)
    big = Big(case, payload)
    events = directory / "events.txt"
    config = realistic_config(directory, limits, events=events)
    try:
        async with Client(linear(gateway_stdio(config)), mode="legacy", read_timeout_seconds=TIMEOUT_S) as client:
            await client.call_tool("k.echo", {"text": "hi"})  # the session's first result carries the bootstrap
            rss = PeakRss(find_gateway(config))
            rss.start()
            stop, worst = anyio.Event(), [0.0]
            result: types.CallToolResult | None = None
            failure = ""
            start = time.perf_counter()
            async with anyio.create_task_group() as tg:
                tg.start_soon(anyio.to_thread.run_sync, rss.sample)
                tg.start_soon(pinger, client, stop, worst)
                try:
                    with anyio.fail_after(timeout_s + 30):
                        result = await client.call_tool(tool, arguments, read_timeout_seconds=timeout_s)
                except Exception as exc:  # noqa: BLE001 -- no answer is the finding
                    failure = f"{type(exc).__name__}: {exc}"
                finally:
                    big.wall_s = time.perf_counter() - start
                    stop.set()
                    rss.stop.set()
            rss.finish()
            big.peak_rss, big.extra_rss, big.ping_max_s = rss.peak, rss.extra, worst[0]
            if result is None:
                big.received = f"NO ANSWER after {big.wall_s:.1f} s ({failure})"
                big.expected = False
                return big
            forwarded = sum(1 for line in events.read_text().splitlines() if line == f"call {tool.split('.', 1)[1]}")
            n = payload
            match kind:
                case "spill":
                    big.expected = describe_spill(result, n, big)
                case "whole":
                    big.expected = describe_whole(result, n, big)
                case "refusal":
                    big.expected = describe_refusal(result, n, big, forwarded)
                case _:
                    big.expected = describe_error(result, n, big)
            del result
    except Exception as exc:  # noqa: BLE001 -- report the failure, still run the other measurements
        big.received = f"FAILED: {type(exc).__name__}: {exc}"
        big.expected = False
        print(f"  FAILED: {exc!r}", flush=True)
    return big


async def large_payloads(tmp: Path, size: int, request_size: int, out: list[Big]) -> None:
    guard = {"max_message_bytes": MAX_MESSAGE_BYTES}  # default size-guard limits; the message cap lets 100 MB in
    mb, rmb = size / MB, request_size / MB
    out.append(
        await big_call(tmp / "big-spill", f"blob {mb:g} MB, default guard", guard, "k.blob", {"n": size}, size, "spill")
    )
    text = "y" * request_size
    out.append(
        await big_call(
            tmp / "big-refuse",
            f"measure {rmb:g} MB, default guard",
            guard,
            "k.measure",
            {"text": text},
            request_size,
            "refusal",
        )
    )
    out.append(
        await big_call(
            tmp / "big-pass",
            f"blob {mb:g} MB, pass-through",
            dict(PASS_THROUGH_LIMITS),
            "k.blob",
            {"n": size},
            size,
            "whole",
        )
    )
    if size > DEFAULTS.max_message_bytes:
        out.append(
            await big_call(
                tmp / "big-all-default-blob",
                f"blob {mb:g} MB, all defaults",
                None,
                "k.blob",
                {"n": size},
                size,
                "error",
                HANG_TIMEOUT_S,
            )
        )
    if request_size > DEFAULTS.max_message_bytes:
        out.append(
            await big_call(
                tmp / "big-all-default-measure",
                f"measure {rmb:g} MB, all defaults",
                None,
                "k.measure",
                {"text": text},
                request_size,
                "error",
                HANG_TIMEOUT_S,
            )
        )
    del text


def print_large(rows: list[Big]) -> None:
    passing = next((b for b in rows if b.case.endswith("pass-through")), None)
    cells = []
    for b in rows:
        extra = None if b.extra_rss is None else b.extra_rss / MB
        cells.append(
            [
                b.case,
                fmt(b.wall_s, "{:.2f}"),
                ratio(b.wall_s, passing.wall_s if passing else None) if b is not passing else "1.00×",
                fmt(None if b.peak_rss is None else b.peak_rss / MB, "{:.0f}"),
                fmt(extra, "{:.0f}"),
                ratio(b.extra_rss, b.payload),
                fmt(None if b.ping_max_s is None else b.ping_max_s * 1e3, "{:.0f}"),
                b.received,
                "" if b.expected is None else ("ok" if b.expected else "UNEXPECTED"),
            ]
        )
    header = ("gateway subprocess", "wall s", "vs pass", "peak RSS MB", "extra MB", "extra/payload", "ping max ms")
    table((*header, "client received", ""), cells, {1, 2, 3, 4, 5, 6})


# -- main ----------------------------------------------------------------------------------------


@dataclass
class Options:
    calls: int
    warmup: int
    size: int
    request_size: int


async def run(opts: Options) -> tuple[Small, list[Big], list[str]]:
    small, large, notes = Small(), list[Big](), list[str]()
    with tempfile.TemporaryDirectory(prefix="pipeline-cost-") as name:
        tmp = Path(name)
        try:
            try:
                await small_calls(tmp, opts.calls, opts.warmup, small)
            except Exception as exc:  # noqa: BLE001 -- report the failure, still run the other section
                notes.append(f"small calls FAILED: {type(exc).__name__}: {exc}")
                print(f"  FAILED: {exc!r}", flush=True)
            await large_payloads(tmp, opts.size, opts.request_size, large)
        finally:
            if (leaked := kill_leftover_children()) is not None:
                notes.append(leaked)
    return small, large, notes


def parse_args(argv: list[str] | None) -> Options:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 60 calls, 10 MB (request 12 MB)")
    parser.add_argument("--calls", type=int, help="echo calls per path after warm-up (default 300)")
    parser.add_argument("--warmup", type=int, help="warm-up echo calls per path (default 30)")
    parser.add_argument("--mb", type=float, help="result size in MB (10^6 bytes; default 100)")
    parser.add_argument("--request-mb", type=float, help="argument size in MB (default: --mb; quick: 12)")
    args = parser.parse_args(argv)
    quick: bool = args.quick
    size = int((args.mb or (10 if quick else 100)) * MB)
    request = args.request_mb or (12 if quick else size / MB)
    return Options(
        calls=args.calls or (60 if quick else 300),
        warmup=args.warmup if args.warmup is not None else (10 if quick else 30),
        size=size,
        request_size=int(request * MB),
    )


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    if Path.cwd().resolve() != ROOT:
        os.chdir(ROOT)
    print(
        f"pipeline cost: python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {opts.calls} echo calls per path "
        f"(+{opts.warmup} warm-up), result {opts.size:,} B, request {opts.request_size:,} B",
        flush=True,
    )
    started = time.perf_counter()
    small, large, notes = anyio.run(run, opts)
    print(f"\ndone in {time.perf_counter() - started:.0f} s\n")
    small.print()
    print()
    print_large(large)
    print()
    notes = [
        *small.notes,
        "(a) uses the project's linear stdio transport (adapters.stdio_transport), the same transport the gateway "
        "uses for its kitchen downstream and the client uses for (b')/(c'); all clients use mode='legacy'. "
        "(b)/(c) are Gateway(load_config(path), chain=[] / None) + Client(gateway.front.server), the same config "
        "file. (b') is `python -m bench._stdio_gateway --chain empty` (gateway.serve.stdio with chain=[]), "
        "(c') is `python -m gateway serve` (tests.harness.gateway_params). Paths are called in turn.",
        "full chain config: steering {tools: [k.*], on: success}, versions: file catalog + check "
        "{tools: [k.*], scan: [arguments, result]}, bootstrap summary. The large-payload gateways use it too.",
        f"large payloads: 'default guard' = default size-guard limits (max_inline_bytes "
        f"{DEFAULTS.max_inline_bytes:,}, max_request_bytes {DEFAULTS.max_request_bytes:,}) with max_message_bytes "
        f"raised to {MAX_MESSAGE_BYTES:,} so the message reaches the guard (the default cap is "
        f"{DEFAULTS.max_message_bytes:,}); 'pass-through' = 1 GiB guard limits; 'all defaults' (only when the payload "
        "exceeds the default message cap) = no limits section at all. One fresh gateway per row.",
        "peak RSS = gateway process (found by its unique config path), psutil every ~10 ms plus VmHWM after "
        "clear_refs; extra = peak − RSS just before the call. ping max = slowest tools/list (answered from the "
        "gateway's catalog cache) on the same session during the call, one every 50 ms: a stalled gateway event "
        "loop shows here, but so does the big message occupying the stdio wire (request rows, pass-through).",
        *notes,
    ]
    for b in large:
        notes.extend(f"{b.case}: {d}" for d in b.details)
    for note in notes:
        print(f"* {note}")
    bad = small.verdict is False or any(b.expected is False for b in large)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
