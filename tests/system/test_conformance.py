"""The official MCP conformance suite, direct vs through the gateway (HTTP front, `prefix: false`).

The fixture server (tests/servers/conformance.py) runs once over HTTP for the direct run, and behind
the gateway once as a stdio downstream (handshake era: pushed requests) and once as a Streamable HTTP
downstream (2026 era: input-required rounds). The scenarios passing through the gateway must be the
ones passing directly (the gateway adds DNS-rebinding protection of its own, so that one must pass).
"""

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.conformance_suite import passing, run_suite
from tests.harness import PYTHON, ROOT, free_port, http_gateway, served, write_config

FIXTURE = str(ROOT / "tests" / "servers" / "conformance.py")
ENV = {"PYTHONPATH": str(ROOT)}

pytestmark = pytest.mark.anyio


def _served_fixture(tmp: Path) -> Any:
    port = free_port()
    port_file = tmp / "fixture.port"
    argv = [PYTHON, FIXTURE, "--transport", "http", "--port", str(port), "--port-file", str(port_file)]

    async def ready() -> str | None:
        return f"http://127.0.0.1:{port}/mcp" if port_file.exists() else None

    return served(argv, ready, "conformance fixture", quiet=True, env={**os.environ, **ENV}, cwd=str(ROOT))


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def direct(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, bool]]:
    tmp = tmp_path_factory.mktemp("direct")
    async with _served_fixture(tmp) as url:
        yield await run_suite(url, tmp)


async def test_the_fixture_passes_every_scenario_directly(direct: dict[str, bool]) -> None:
    assert len(direct) >= 30, direct
    assert passing(direct) == set(direct), sorted(name for name, ok in direct.items() if not ok)


async def test_through_the_gateway_to_a_stdio_server_the_same_scenarios_pass(
    direct: dict[str, bool], tmp_path: Path
) -> None:
    fixture = {"transport": "stdio", "command": PYTHON, "args": [FIXTURE], "env": ENV, "cwd": str(ROOT)}
    config = write_config(tmp_path, {"conformance": {**fixture, "prefix": False, "protocol": "legacy"}})
    async with http_gateway(config) as base:
        through = await run_suite(f"{base}/mcp", tmp_path)
    assert passing(through) == passing(direct) | {"dns-rebinding-protection"}, _differences(direct, through)


async def test_through_the_gateway_to_an_http_server_the_same_scenarios_pass(
    direct: dict[str, bool], tmp_path: Path
) -> None:
    async with _served_fixture(tmp_path) as url:
        config = write_config(tmp_path, {"conformance": {"transport": "http", "url": url, "prefix": False}})
        async with http_gateway(config) as base:
            through = await run_suite(f"{base}/mcp", tmp_path)
    assert passing(through) == passing(direct) | {"dns-rebinding-protection"}, _differences(direct, through)


def _differences(direct: dict[str, bool], through: dict[str, bool]) -> str:
    lost = sorted(passing(direct) - passing(through))
    gained = sorted(passing(through) - passing(direct))
    return f"pass directly but not through the gateway: {lost}; only through the gateway: {gained}"
