"""What the page's recording costs a call: echo p50 through a stdio gateway with recording on (`serve --ui`, the
page beside the session) and off, both processes running side by side and measured in interleaved rounds (the
machine's load falls on both alike), for both client eras; the ratio on / off per era. With `--instructions`,
the same pair under callgrind (instructions per call, load-independent) as a second opinion.

Usage: `.venv/bin/python -m bench.page_recording [--rounds 40] [--per-round 25] [--instructions]`
"""

import argparse
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from bench._harness import echo_once, percentile, table
from bench._processes import PASS_THROUGH_LIMITS
from bench.call_instructions import per_call
from tests.harness import KITCHEN, PYTHON, ROOT, free_port, write_config

MODES = ("legacy", "2026-07-28")


def params(config: Path, record: bool) -> StdioServerParameters:
    ui = ["--ui", f"127.0.0.1:{free_port()}"] if record else []
    return StdioServerParameters(
        command=PYTHON,
        args=["-m", "gateway", "serve", "--config", str(config), "--log-level", "WARNING", *ui],
        cwd=str(ROOT),
        env={"PYTHONPATH": str(ROOT)},
    )


async def interleaved(config: Path, mode: str, opts: argparse.Namespace) -> dict[str, list[float]]:
    """Latencies of `rounds * per_round` echoes on each side, alternating sides (and which goes first) per round."""
    seconds: dict[str, list[float]] = {"on": [], "off": []}
    async with AsyncExitStack() as stack:
        clients = {
            side: await stack.enter_async_context(Client(params(config, side == "on"), mode=mode))
            for side in ("on", "off")
        }
        for client in clients.values():
            for _ in range(opts.warm):
                await echo_once(client, "k.echo")
        for n in range(opts.rounds):
            for side in ("on", "off") if n % 2 == 0 else ("off", "on"):
                for _ in range(opts.per_round):
                    seconds[side].append(await echo_once(clients[side], "k.echo"))
    return seconds


async def main(opts: argparse.Namespace) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as name:
        kitchen = {"transport": "stdio", "command": PYTHON, "args": [KITCHEN, "--name", "k"]}
        config = write_config(Path(name), {"k": kitchen}, limits=dict(PASS_THROUGH_LIMITS))
        for mode in MODES:
            seconds = await interleaved(config, mode, opts)
            on, off = (percentile(seconds[s], 0.5) or 0.0 for s in ("on", "off"))
            row = [mode, f"{off * 1e6:.0f} µs", f"{on * 1e6:.0f} µs", f"{on / off:.3f}×"]
            if opts.instructions:
                counts = {}
                for side in ("off", "on"):
                    ui = ["--ui", f"127.0.0.1:{free_port()}"] if side == "on" else []
                    counts[side] = await per_call(ROOT, config, mode, opts, extra=ui)
                row += [
                    f"{counts['off'] / 1e6:.3f} M",
                    f"{counts['on'] / 1e6:.3f} M",
                    f"{counts['on'] / counts['off']:.3f}×",
                ]
            rows.append(row)
    header = ["client era", "p50 off", "p50 on", "on / off"]
    if opts.instructions:
        header += ["instr off", "instr on", "on / off"]
    table(header, rows, right=set(range(1, len(header))))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--per-round", type=int, default=25)
    parser.add_argument("--warm", type=int, default=30)
    parser.add_argument("--calls", type=int, default=200, help="calls counted under callgrind (--instructions)")
    parser.add_argument("--instructions", action="store_true")
    anyio.run(main, parser.parse_args())
