"""What the official suite is run against: each server alone, and the gateway in front of it, every way it can be.

Two servers: the reference everything-server (`@modelcontextprotocol/server-everything` from npm; TypeScript SDK
1.x, so it speaks the handshake era only) and the suite's own reference fixtures (`tests/servers/conformance.py`,
both eras). Each runs once alone over Streamable HTTP, and behind a gateway (HTTP front, `prefix: false`, the
suite calling the fixtures by their own names) as a stdio downstream, and the fixtures also as an HTTP one (a
2026-era downstream). The gateways start together: their start-ups overlap.
"""

import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from tests.conformance_suite import NODE_BIN, REQUIREMENTS, Outcome, run_suite
from tests.harness import PYTHON, ROOT, free_port, http_gateways, served, write_config

EVERYTHING = ROOT / ".node" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
FIXTURE = str(ROOT / "tests" / "servers" / "conformance.py")
FIXTURE_ENV = {"PYTHONPATH": str(ROOT)}


@dataclass(frozen=True, slots=True)
class Setup:
    """One server: its URL alone, and the gateway URL of each way through (way -> URL)."""

    alone: str
    through: dict[str, str]


@dataclass(frozen=True, slots=True)
class Comparison:
    """One requirement set against one server: alone, and each way through the gateway."""

    alone: dict[str, Outcome]
    through: dict[str, dict[str, Outcome]]


async def _port_open(port: int) -> bool:
    try:
        stream = await anyio.connect_tcp("127.0.0.1", port)
    except OSError:
        return False
    await stream.aclose()
    return True


def _everything_alone() -> Any:
    if not EVERYTHING.exists():
        raise AssertionError(f"{EVERYTHING} is missing: run ./scripts/setup-lab (it calls scripts/node-tools)")
    port = free_port()

    async def ready() -> str | None:
        return f"http://127.0.0.1:{port}/mcp" if await _port_open(port) else None

    argv = [str(NODE_BIN / "node"), str(EVERYTHING), "streamableHttp"]
    return served(argv, ready, "server-everything", quiet=True, env={**os.environ, "PORT": str(port)})


def _fixture_alone(tmp: Path) -> Any:
    port, port_file = free_port(), tmp / "fixture.port"
    argv = [PYTHON, FIXTURE, "--transport", "http", "--port", str(port), "--port-file", str(port_file)]

    async def ready() -> str | None:
        return f"http://127.0.0.1:{port}/mcp" if port_file.exists() else None

    return served(argv, ready, "conformance fixture", quiet=True, env={**os.environ, **FIXTURE_ENV}, cwd=str(ROOT))


@asynccontextmanager
async def setups(tmp: Path) -> AsyncIterator[dict[str, Setup]]:
    """Both servers alone and behind their gateways, all running: server name -> its setup."""
    async with AsyncExitStack() as stack:
        everything = await stack.enter_async_context(_everything_alone())
        fixture = await stack.enter_async_context(_fixture_alone(tmp))
        node = str(NODE_BIN / "node")
        fixture_stdio = {"transport": "stdio", "command": PYTHON, "args": [FIXTURE], "env": FIXTURE_ENV}
        ways: dict[tuple[str, str], dict[str, Any]] = {
            ("everything", "stdio"): {"transport": "stdio", "command": node, "args": [str(EVERYTHING), "stdio"]},
            ("fixtures", "stdio"): {**fixture_stdio, "cwd": str(ROOT), "protocol": "legacy"},
            ("fixtures", "http"): {"transport": "http", "url": fixture},
        }
        configs = []
        for (server, way), entry in ways.items():
            folder = tmp / f"{server}-{way}"
            folder.mkdir()
            configs.append(write_config(folder, {server: {**entry, "prefix": False}}))
        bases = await stack.enter_async_context(http_gateways(*configs))
        through = {key: f"{base}/mcp" for key, base in zip(ways, bases, strict=True)}
        yield {
            "everything": Setup(everything, {f"via {w}": u for (s, w), u in through.items() if s == "everything"}),
            "fixtures": Setup(fixture, {f"via {w}": u for (s, w), u in through.items() if s == "fixtures"}),
        }


async def compare(setup: Setup, requirements: str, tmp: Path) -> Comparison:
    """The requirement set against the server alone and through each gateway, the runs side by side: most of a
    run is the suite's own fixed windows (reads of a stream that wait 0.5 to 1.5 s for messages that may not come),
    not work, so one after the other they only added up their waits."""
    outcomes: dict[str, dict[str, Outcome]] = {}

    async def run(name: str, url: str) -> None:
        outcomes[name] = await run_suite(url, tmp, requirements)

    async with anyio.create_task_group() as tg:
        for name, url in {"alone": setup.alone, **setup.through}.items():
            tg.start_soon(run, name, url)
    return Comparison(outcomes["alone"], {way: outcomes[way] for way in setup.through})


__all__ = ["REQUIREMENTS", "Comparison", "Setup", "compare", "setups"]
