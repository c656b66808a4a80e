"""What the benches share: timing one call and many, CPU and peak RSS of a process, tables, leftover processes."""

import math
import threading
import time
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass

import anyio
import anyio.to_thread
import mcp.types as types
import psutil
from mcp import Client

SAMPLE_S = 0.01
MB = 1_000_000


def table(header: Sequence[str], rows: Sequence[Sequence[str]], right: set[int]) -> None:
    cells = [list(header), *(list(r) for r in rows)]
    widths = [max(len(c[i]) for c in cells) for i in range(len(header))]
    for n, row in enumerate(cells):
        print(
            "  ".join(
                v.rjust(w) if i in right else v.ljust(w) for i, (v, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if n == 0:
            print("  ".join("-" * w for w in widths))


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1))]


def text_of(result: types.CallToolResult) -> str:
    first = result.content[0] if result.content else None
    return first.text if isinstance(first, types.TextContent) else ""


async def echo_once(client: Client, tool: str) -> float:
    start = time.perf_counter()
    result = await client.call_tool(tool, {"text": "hi"})
    elapsed = time.perf_counter() - start
    if text_of(result) != "hi":
        raise RuntimeError(f"{tool} answered {text_of(result)!r}")
    return elapsed


async def throughput(client: Client, tool: str, total: int, concurrency: int) -> float:
    """Seconds for `total` calls made by `concurrency` callers sharing one session."""
    remaining = total

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await client.call_tool(tool, {"text": "hi"})

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(concurrency):
            tg.start_soon(worker)
    return time.perf_counter() - start


def cpu_seconds(proc: psutil.Process | None) -> float:
    """User + system CPU the process has used so far (0 when it is gone or unknown)."""
    if proc is None:
        return 0.0
    try:
        times = proc.cpu_times()
    except psutil.Error:
        return 0.0
    return float(times.user + times.system)


def descendants() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def started_since(before: set[int]) -> psutil.Process | None:
    """The topmost process started since `before` (a `descendants()` snapshot): the server a side just launched."""
    new = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
    pids = {p.pid for p in new}
    with suppress(psutil.Error):
        tops = [p for p in new if p.ppid() not in pids]
        return tops[0] if tops else None
    return None


class PeakRss:
    """Peak RSS of one process while a block runs: psutil samples every ~10 ms from a thread.

    Where the kernel allows resetting the high-water mark (`/proc/PID/clear_refs` ← 5), VmHWM is
    read too, so a spike shorter than the sampling interval is not missed.
    """

    def __init__(self, proc: psutil.Process) -> None:
        self.proc = proc
        self.stop = threading.Event()
        self.baseline = 0
        self.peak = 0
        self.hwm_reset = False

    def _hwm(self) -> int:
        with open(f"/proc/{self.proc.pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        return 0

    def start(self) -> None:
        self.baseline = self.peak = int(self.proc.memory_info().rss)
        try:
            with open(f"/proc/{self.proc.pid}/clear_refs", "w", encoding="ascii") as f:
                f.write("5")
            self.hwm_reset = True
        except OSError:
            self.hwm_reset = False

    def sample(self) -> None:
        while not self.stop.wait(SAMPLE_S):
            with suppress(psutil.Error):
                self.peak = max(self.peak, int(self.proc.memory_info().rss))

    def finish(self) -> None:
        with suppress(psutil.Error, OSError):
            self.peak = max(self.peak, int(self.proc.memory_info().rss))
            if self.hwm_reset:
                self.peak = max(self.peak, self._hwm())

    @property
    def extra(self) -> int:
        return self.peak - self.baseline


@dataclass
class Blob:
    wall_s: float | None
    received: int | None
    extra_rss: int | None = None
    error: str | None = None


async def blob_call(client: Client, tool: str, n: int, proc: psutil.Process | None, timeout_s: float) -> Blob:
    """One `blob` call of `n` bytes: wall time, the bytes received, the peak extra RSS of `proc` meanwhile."""
    rss = PeakRss(proc) if proc is not None else None
    try:
        if rss is not None:
            rss.start()
        start = time.perf_counter()
        async with anyio.create_task_group() as tg:
            if rss is not None:
                tg.start_soon(anyio.to_thread.run_sync, rss.sample)
            try:
                with anyio.fail_after(timeout_s + 30):
                    result = await client.call_tool(tool, {"n": n}, read_timeout_seconds=timeout_s)
            finally:
                if rss is not None:
                    rss.stop.set()
        wall = time.perf_counter() - start
        if rss is not None:
            rss.finish()
        received = len(text_of(result))
        error = None
        if result.is_error or received != n:
            error = f"is_error={result.is_error}, {received:,} chars: {text_of(result)[:200]!r}"
        del result
        return Blob(wall, received, None if rss is None else rss.extra, error)
    except Exception as exc:  # noqa: BLE001 -- a failing call is a finding to report, not a reason to stop
        while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]  # the task group's wrapping says nothing: name what failed
        what = "no answer within the time limit" if isinstance(exc, TimeoutError) else str(exc)
        return Blob(None, None, None, f"{type(exc).__name__}: {what}")


def kill_leftover_children() -> str | None:
    """Kill every child process still running; a note naming them, or None when there were none."""
    leaked = [p for p in psutil.Process().children(recursive=True) if p.is_running()]
    if not leaked:
        return None
    names = ", ".join(f"{p.pid} {' '.join(p.cmdline()[:4])}" for p in leaked if p.is_running())
    for proc in leaked:
        with suppress(psutil.Error):
            proc.kill()
    return f"LEAKED processes were still running at the end and were killed: {names}"
