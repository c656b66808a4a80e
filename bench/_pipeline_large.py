"""bench.pipeline_cost, large payloads: a 100 MB result and 100 MB of arguments through a gateway subprocess."""

import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp.types as types
from mcp import Client

from bench._harness import MB, PeakRss, table
from bench._pipeline_setup import DEFAULTS, HANG_TIMEOUT_S, PING_INTERVAL_S, first_text, realistic_config
from bench._pipeline_small import fmt, ratio
from bench._processes import (
    MAX_MESSAGE_BYTES,
    PASS_THROUGH_LIMITS,
    TIMEOUT_S,
    find_gateway,
    gateway_stdio,
    linear,
)
from tests.harness import hints_of


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
