"""The sides of `bench.peers`: for one front → downstream row, each side started and connected by the same
SDK client, in the era the row asks for.

* direct: the kitchen test server itself, over the row's front transport;
* gateway: `gateway serve` (stdio) or `gateway serve --http`, the kitchen behind it on the row's downstream
  transport, with the default pipeline and pass-through size limits;
* mcp-proxy (HTTP → stdio and stdio → HTTP only: it has no stdio → stdio mode) and FastMCP's proxy,
  each from its own bench environment (`bench._peer_envs`);
* floor (in front of a stdio kitchen only): `bench.relay_floor`, a relay that only copies messages: what
  the extra process hop alone costs, the bound under any proxy's ratio to direct.
"""

from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
from mcp import Client, StdioServerParameters

from bench._harness import descendants, started_since
from bench._peer_envs import FASTMCP, MCP_PROXY
from bench._processes import PASS_THROUGH_LIMITS, TIMEOUT_S, accepting, http_kitchen, linear
from gateway.config import StdioServerConfig
from tests.harness import KITCHEN, PYTHON, ROOT, free_port, http_client, http_gateway, kitchen, served, write_config

ROWS: dict[str, tuple[str, ...]] = {
    "stdio→stdio": ("direct", "floor", "gateway", "fastmcp"),
    "HTTP→stdio": ("direct", "floor", "gateway", "mcp-proxy", "fastmcp"),
    "stdio→HTTP": ("direct", "gateway", "mcp-proxy", "fastmcp"),
}
ERAS = {"2025-11-25": "legacy", "2026-07-28": "auto"}
"""Client mode per era: a pinned handshake, or the SDK's probe (a peer without the 2026 era falls back)."""


@dataclass
class Side:
    name: str
    client: Client
    tool: str
    proc: psutil.Process | None
    """The side's server process (the proxy; the kitchen itself for direct), for its CPU and memory."""

    @property
    def version(self) -> str:
        return str(self.client.protocol_version)


@dataclass
class RowPlace:
    """Where one row's sides live: a scratch folder, and the kitchen's URL when the downstream is HTTP."""

    tmp: Path
    kitchen_url: str | None = None


def kitchen_argv(name: str = "k") -> list[str]:
    return [PYTHON, KITCHEN, "--name", name]


def gateway_config(place: RowPlace, label: str) -> Path:
    directory = place.tmp / label
    directory.mkdir(parents=True)
    if place.kitchen_url is None:
        server = kitchen("k", timeout_s=TIMEOUT_S)
    else:
        server = {"transport": "http", "url": f"{place.kitchen_url}/mcp", "timeout_s": TIMEOUT_S}
    return write_config(directory, {"k": server}, limits=dict(PASS_THROUGH_LIMITS))


def stdio_side_argv(kind: str, place: RowPlace, label: str) -> list[str]:
    """The command line of a side served on stdio."""
    down = ["--url", f"{place.kitchen_url}/mcp"] if place.kitchen_url else ["--", *kitchen_argv()]
    match kind:
        case "direct":
            return kitchen_argv()
        case "gateway":
            config = gateway_config(place, label)
            return [PYTHON, "-m", "gateway", "serve", "--config", str(config), "--log-level", "WARNING"]
        case "fastmcp":
            return [str(FASTMCP.python), str(ROOT / "bench" / "peer_fastmcp.py"), "--stdio", *down]
        case "floor":
            return [PYTHON, "-m", "bench.relay_floor", "--stdio", *down]
        case "mcp-proxy":
            assert place.kitchen_url is not None, "mcp-proxy has no stdio → stdio mode"
            proxy = str(MCP_PROXY.executable("mcp-proxy"))
            return [proxy, "--transport", "streamablehttp", "--log-level", "WARNING", f"{place.kitchen_url}/mcp"]
    raise ValueError(f"unknown side {kind!r}")


async def http_side_base(kind: str, place: RowPlace, label: str, stack: AsyncExitStack) -> str:
    """Start a side served on Streamable HTTP; its base URL."""
    enter = stack.enter_async_context
    port = free_port()
    match kind:
        case "direct":
            return await enter(http_kitchen(place.tmp, label.replace("/", "-")))
        case "gateway":
            return await enter(http_gateway(gateway_config(place, label)))
        case "floor":
            argv = [PYTHON, "-m", "bench.relay_floor", "--port", str(port)]
            return await enter(served([*argv, "--", *kitchen_argv()], accepting(port), kind, quiet=True, cwd=ROOT))
        case "mcp-proxy":
            argv = [str(MCP_PROXY.executable("mcp-proxy")), "--port", str(port), "--log-level", "WARNING"]
            return await enter(served([*argv, "--", *kitchen_argv()], accepting(port), kind, quiet=True))
        case "fastmcp":
            argv = [str(FASTMCP.python), str(ROOT / "bench" / "peer_fastmcp.py"), "--port", str(port)]
            return await enter(served([*argv, "--", *kitchen_argv()], accepting(port), kind, quiet=True))
    raise ValueError(f"unknown side {kind!r}")


async def open_side(
    kind: str, front: str, era: str, place: RowPlace, stack: AsyncExitStack, *, label: str, big: bool = False
) -> Side:
    """Start one side and connect the driver client to it in `era`; closed with `stack`.

    `big`: stdio sides are reached through the project's linear-time stdio transport instead of the
    SDK's stock client (whose reader is O(n²) in the line length: a 100 MB result would measure the client).
    """
    before = descendants()
    mode = ERAS[era]
    if front == "stdio":
        argv = stdio_side_argv(kind, place, label)
        env = {"PYTHONPATH": str(ROOT)}
        target: Any
        if big:
            server = StdioServerConfig(transport="stdio", command=argv[0], args=argv[1:], cwd=str(ROOT), env=env)
            target = linear(server)
        else:
            target = StdioServerParameters(command=argv[0], args=argv[1:], cwd=str(ROOT), env=env)
        client = await stack.enter_async_context(Client(target, mode=mode, read_timeout_seconds=TIMEOUT_S))
    else:
        base = await http_side_base(kind, place, label, stack)
        client = await stack.enter_async_context(http_client(base, mode=mode, read_timeout_seconds=TIMEOUT_S))
    tool = "k.echo" if kind == "gateway" else "echo"
    # A shared HTTP kitchen serves every side of its row, so its CPU is no one side's: not metered.
    proc = None if kind == "direct" and place.kitchen_url else started_since(before)
    return Side(kind, client, tool, proc)
