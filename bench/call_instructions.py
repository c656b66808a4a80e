"""CPU per forwarded call in instructions: the gateway process, sequential stdio→stdio `tools/call` echoes through
the full default pipeline, counted by callgrind (a count does not depend on the machine's load, so two checkouts
compare without interleaving). Both client eras; with `--before DIR`, that checkout too (run with this venv and
its own code on PYTHONPATH) and the ratio. `--servers 1,10`: a row per count of configured kitchens (calls go to
the first, or with `--call last` the last), so a per-call cost that grows with the number of servers shows;
`--exposure all` leaves out what `auto` over its budget costs a call (10 kitchens list 120+ tools).

per call = the instructions counted while `--calls` calls are served, after `--warm` calls, divided by `--calls`:
the counters are zeroed and read by `callgrind_control` around them, so start-up and imports are left out.

Usage: `.venv/bin/python -m bench.call_instructions [--before /path/to/checkout] [--calls 200] [--warm 20]
[--servers 1] [--call first|last] [--exposure all]`
"""

import argparse
import re
import sys
import tempfile
from pathlib import Path

import anyio
import psutil
from mcp import Client, StdioServerParameters

from bench._harness import echo_once, table
from bench._processes import PASS_THROUGH_LIMITS
from tests.harness import KITCHEN, PYTHON, ROOT, write_config

MODES = ("legacy", "2026-07-28")
THREAD = re.compile(r"^\s*Th\s+\d+\s+([\d,]+)", re.MULTILINE)
"""A thread's instruction count in `callgrind_control -e` output (the process's count is their sum)."""


async def callgrind(action: str, pid: int) -> str:
    done = await anyio.run_process(["callgrind_control", action, str(pid)])
    return done.stdout.decode()


async def all_up(client: Client) -> None:
    """Wait until `gateway.status` says every server is up or idle (their start-up is not what a call costs)."""
    while True:
        status = (await client.call_tool("gateway.status", {})).structured_content or {}
        if all(s["state"] in ("up", "idle") for s in status["servers"].values()):
            return
        await anyio.sleep(1)


async def per_call(
    checkout: Path,
    config: Path,
    mode: str,
    opts: argparse.Namespace,
    extra: list[str] | None = None,
    tool: str = "k.echo",
) -> float:
    """Instructions per call of one gateway process of `checkout` under callgrind, counted around `opts.calls`
    (`extra`: more `serve` arguments, e.g. `--ui`)."""
    argv = ["--tool=callgrind", "--callgrind-out-file=/dev/null", PYTHON, "-m", "gateway", "serve"]
    params = StdioServerParameters(
        command="valgrind",
        args=[*argv, "--config", str(config), "--log-level", "WARNING", *(extra or [])],
        cwd=str(checkout),
        env={"PYTHONPATH": str(checkout)},
    )
    async with Client(params, mode=mode, read_timeout_seconds=600) as client:
        await all_up(client)  # under callgrind, servers may still be starting after `startup_wait_s`
        for _ in range(opts.warm):
            await echo_once(client, tool)
        pid = next(p.pid for p in psutil.Process().children() if str(config) in " ".join(p.cmdline()))
        await callgrind("--zero", pid)
        for _ in range(opts.calls):
            await echo_once(client, tool)
        counters = await callgrind("-e", pid)
    threads = [int(n.replace(",", "")) for n in THREAD.findall(counters)]
    if not threads:
        raise RuntimeError(f"callgrind_control printed no instruction count: {counters!r}")
    calls: int = opts.calls
    return sum(threads) / calls


async def main(opts: argparse.Namespace) -> None:
    sides = [("after", ROOT)] if opts.before is None else [("before", opts.before), ("after", ROOT)]
    rows = []
    with tempfile.TemporaryDirectory() as name:
        for servers in opts.servers:
            tmp = Path(name) / f"{servers}-servers"  # a config path of its own: how `per_call` finds the process
            tmp.mkdir()
            names = ["k", *(f"k{n}" for n in range(2, servers + 1))]
            kitchens = {n: {"transport": "stdio", "command": PYTHON, "args": [KITCHEN, "--name", n]} for n in names}
            exposure = {} if opts.exposure is None else {"exposure": {"mode": opts.exposure}}
            config = write_config(tmp, kitchens, limits=dict(PASS_THROUGH_LIMITS), **exposure)
            for mode in MODES:
                tool = f"{names[0 if opts.call == 'first' else -1]}.echo"
                counts = {label: await per_call(checkout, config, mode, opts, tool=tool) for label, checkout in sides}
                row = [mode, str(servers), *(f"{counts[label] / 1e6:.3f} M" for label, _ in sides)]
                if opts.before is not None:
                    row.append(f"{counts['after'] / counts['before']:.2f}×")
                rows.append(row)
                print(f"{mode}, {servers} servers: {counts}", file=sys.stderr, flush=True)
    header = ["client era", "servers", *(label for label, _ in sides), *(["after / before"] if opts.before else [])]
    table(header, rows, right=set(range(1, len(header))))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--before", type=Path, default=None)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--warm", type=int, default=20)
    parser.add_argument(
        "--servers", type=lambda v: [int(n) for n in v.split(",")], default=[1], help="kitchens configured, e.g. 1,10"
    )
    parser.add_argument("--call", choices=["first", "last"], default="first", help="the server called")
    parser.add_argument("--exposure", default=None, help="exposure mode (`all`: no per-call cost of `auto`'s budget)")
    anyio.run(main, parser.parse_args())
