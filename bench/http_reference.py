"""http→stdio echo beside its references: how much of the gateway's overhead any Python proxy pays here.

Usage, from the repository root: `.venv/bin/python -m bench.http_reference [--calls 300]
[--throughput-calls 1600] [--concurrency 16] [--mcp-proxy PATH]`. In one run, interleaved call by
call (latency) and round by round (throughput at 16 concurrent callers), it compares the same SDK
client talking to:

* direct: kitchen's own Streamable HTTP server (the baseline of `bench.proxy_overhead`);
* floor: `bench.relay_floor`, a relay that only rewrites ids between HTTP and kitchen over stdio;
* gateway: `gateway serve --http` with kitchen over stdio (the full pipeline, raw pass-through limits);
* mcp-proxy, when `--mcp-proxy` names its executable (installed apart: it needs mcp 1.x).

The floor shows what the machine leaves for a proxy's own work; the gateway/floor column is that work.
"""

import argparse
import statistics
import sys
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
from mcp import Client

from bench._harness import echo_once, percentile, table, throughput
from bench._processes import TIMEOUT_S, accepting, gateway_config, http_kitchen
from tests.harness import KITCHEN, PYTHON, free_port, http_client, http_gateway, kitchen, served

ROUNDS = 4


async def measure(sides: dict[str, tuple[Client, str]], calls: int, total: int, concurrency: int) -> list[list[str]]:
    for client, tool in sides.values():
        for _ in range(30):
            await echo_once(client, tool)
    latency: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(calls):
        for name, (client, tool) in sides.items():
            latency[name].append(await echo_once(client, tool))
    wall = dict.fromkeys(sides, 0.0)
    for _ in range(ROUNDS):
        for name, (client, tool) in sides.items():
            wall[name] += await throughput(client, tool, total // ROUNDS, concurrency)
    p50 = {name: statistics.median(values) for name, values in latency.items()}
    rate = {name: (total // ROUNDS) * ROUNDS / seconds for name, seconds in wall.items()}
    rows = []
    for name in sides:
        p99 = percentile(latency[name], 0.99) or 0.0
        rows.append(
            [
                name,
                f"{p50[name] * 1e3:.2f} ms",
                f"{p99 * 1e3:.2f} ms",
                f"{p50[name] / p50['direct']:.2f}×",
                f"{p50[name] / p50['floor']:.2f}×",
                f"{rate[name]:.0f} /s",
                f"{rate[name] / rate['direct']:.2f}×",
                f"{rate[name] / rate['floor']:.2f}×",
            ]
        )
    return rows


async def run(args: argparse.Namespace) -> None:
    kitchen_argv = [PYTHON, str(KITCHEN), "--name", "k"]
    with tempfile.TemporaryDirectory() as tmp:
        config = gateway_config(Path(tmp) / "gateway", {"k": kitchen("k", timeout_s=TIMEOUT_S)})
        async with AsyncExitStack() as stack:
            enter = stack.enter_async_context
            sides = {"direct": (await enter(http_client(await enter(http_kitchen(Path(tmp))))), "echo")}
            port = free_port()
            floor = await enter(
                served(
                    [PYTHON, "-m", "bench.relay_floor", "--port", str(port), "--", *kitchen_argv],
                    accepting(port),
                    "relay",
                )
            )
            sides["floor"] = (await enter(http_client(floor)), "echo")
            sides["gateway"] = (await enter(http_client(await enter(http_gateway(config)))), "k.echo")
            if args.mcp_proxy:
                port = free_port()
                peer = await enter(
                    served(
                        [args.mcp_proxy, "--port", str(port), "--", *kitchen_argv],
                        accepting(port),
                        "mcp-proxy",
                        quiet=True,
                    )
                )
                sides["mcp-proxy"] = (await enter(http_client(peer)), "echo")
            print(
                f"[http→stdio echo] {args.calls} calls interleaved, then {args.throughput_calls} calls × "
                f"{args.concurrency} callers in {ROUNDS} alternating rounds",
                flush=True,
            )
            rows = await measure(sides, args.calls, args.throughput_calls, args.concurrency)
    print()
    header = ["side", "p50", "p99", "p50/direct", "p50/floor", "throughput", "tput/direct", "tput/floor"]
    table(header, rows, right=set(range(1, len(header))))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--throughput-calls", type=int, default=1600)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--mcp-proxy", help="path of an installed mcp-proxy executable to measure as well")
    anyio.run(run, parser.parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
