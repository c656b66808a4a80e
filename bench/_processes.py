"""The benches' processes: the kitchen test server and the gateway, as stdio configs, HTTP servers and
linear-time client transports, with the size-guard limits that make a gateway a pass-through."""

import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psutil

from adapters import session_only, stdio_transport
from gateway.config import StdioServerConfig
from gateway.sdk import Transport
from tests.harness import KITCHEN, PYTHON, gateway_params, served, write_config

TIMEOUT_S = 300.0
MAX_MESSAGE_BYTES = 512 * 1024 * 1024  # above the 100 MB blob plus its JSON envelope
PASS_THROUGH_BYTES = 1024 * 1024 * 1024
PASS_THROUGH_LIMITS: dict[str, Any] = {
    "max_message_bytes": MAX_MESSAGE_BYTES,
    "max_inline_bytes": PASS_THROUGH_BYTES,
    "max_request_bytes": PASS_THROUGH_BYTES,
}
"""The gateways' size-guard limits: nothing is spilled or refused (the guard still runs), so proxying is measured."""


def kitchen_stdio(name: str, *extra: str) -> StdioServerConfig:
    return StdioServerConfig(transport="stdio", command=PYTHON, args=[KITCHEN, "--name", name, *extra])


def gateway_stdio(config: Path) -> StdioServerConfig:
    """The gateway as a stdio server, started like `tests.harness.gateway_params` does."""
    params = gateway_params(config)
    return StdioServerConfig(
        transport="stdio", command=params.command, args=params.args, cwd=params.cwd, env=params.env or {}
    )


def linear(server: StdioServerConfig) -> Transport:
    """The project's linear-time stdio client transport (the SDK's stock one is O(n²) in the line length)."""
    return session_only(stdio_transport(server, max_message_bytes=MAX_MESSAGE_BYTES))


def gateway_config(directory: Path, servers: dict[str, Any], **sections: Any) -> Path:
    """A gateway config in its own folder: its path is unique, which is how `find_gateway` spots the process.

    The size guard gets 1 GiB limits (`PASS_THROUGH_LIMITS`): with its defaults a result over 20,000 bytes
    would be spilled to disk and previewed, and the benches measure pass-through proxying.
    """
    directory.mkdir(parents=True)
    return write_config(directory, servers, limits=dict(PASS_THROUGH_LIMITS), **sections)


def find_gateway(config: Path) -> psutil.Process:
    """The gateway process: the one whose command line names this (unique) config path."""
    for proc in psutil.process_iter(["cmdline"]):
        cmdline: list[str] = proc.info.get("cmdline") or []
        if "gateway" in cmdline and str(config) in cmdline:
            return proc
    raise RuntimeError(f"no gateway process runs with --config {config}")


@asynccontextmanager
async def http_kitchen(directory: Path, name: str = "k") -> AsyncIterator[str]:
    """Run kitchen with `--transport http --port 0`; yields its base URL once the port file appears."""
    port_file = directory / f"kitchen-{name}.port"
    port_file.unlink(missing_ok=True)  # left by an earlier kitchen

    async def ready() -> str | None:
        return f"http://127.0.0.1:{port_file.read_text().strip()}" if port_file.exists() else None

    argv = [PYTHON, KITCHEN, "--name", name, "--transport", "http", "--port", "0", "--port-file", str(port_file)]
    async with served(argv, ready, "kitchen") as base:
        yield base


def accepting(port: int) -> Callable[[], Awaitable[str | None]]:
    """A `served` readiness check: the base URL once something accepts connections on `port`."""

    async def ready() -> str | None:
        with socket.socket() as probe:
            return f"http://127.0.0.1:{port}" if probe.connect_ex(("127.0.0.1", port)) == 0 else None

    return ready
