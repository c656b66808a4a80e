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
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.to_thread

from bench._harness import MB, kill_leftover_children
from bench._pipeline_large import Big, large_payloads, print_large
from bench._pipeline_setup import DEFAULTS
from bench._pipeline_small import Small, small_calls
from bench._processes import (
    MAX_MESSAGE_BYTES,
)
from tests.harness import ROOT

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
