"""A client is a client, not a connection nor a session (issue 22, item 3): real clients over Streamable HTTP against
a real gateway process get the driver prompt once and keep the tools they found, however they use connections and
sessions. The TypeScript client 2.x (2026 era) on a new connection per call, with parallel first calls, after a
cancel; langchain-mcp-adapters' default (a 2025-era session per call), sequential and parallel; another identity or
another `clientInfo.name` is another client. Each scenario is its own client (a token or a name of its own), so each
starts at first contact. The TypeScript client is the client matrix's (`scripts/client-matrix`, on its Node);
langchain-mcp-adapters is installed by `scripts/continuity-clients` (both run by scripts/setup-lab)."""

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.clients.matrix import NODE
from tests.harness import KITCHEN, PYTHON, ROOT, hints_of, http_client, http_gateway, write_config

pytestmark = pytest.mark.anyio

CLIENTS = ROOT / ".clients"
HERE = Path(__file__).parent / "continuity"
TOKENS = ["ts-a", "lc-seq", "lc-par", "py-a", "py-b"]


def secret(name: str) -> str:
    return f"token-of-{name}-for-continuity"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    if not (CLIENTS / "node" / "node_modules" / "client-2").is_dir() or not (CLIENTS / "langchain" / "bin").is_dir():
        pytest.fail("the continuity clients are not installed: run ./scripts/setup-lab")
    folder = tmp_path_factory.mktemp("continuity")
    servers = {"kitchen": {"transport": "stdio", "command": PYTHON, "args": [KITCHEN, "--name", "kitchen"]}}
    tokens = [{"name": name, "token": secret(name)} for name in TOKENS]
    pins = ["kitchen.echo", "kitchen.slow"]  # listed (langchain calls listed tools only); kitchen.blob stays hidden
    config = write_config(folder, servers, auth={"tokens": tokens}, exposure={"mode": "search", "pin": pins})
    async with http_gateway(config) as base:
        yield f"{base}/mcp"


async def lines_of(argv: list[str]) -> dict[str, dict[str, Any]]:
    """Run a client process to its end; its JSON lines by label."""
    with anyio.fail_after(90):
        done = await anyio.run_process(argv, check=False, cwd=str(ROOT))
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    found = [json.loads(line) for line in done.stdout.decode().splitlines() if line.startswith("{")]
    return {line["label"]: line for line in found}


async def ts2(url: str, scenario: str, name: str, token: str = "ts-a") -> dict[str, dict[str, Any]]:
    return await lines_of([NODE, str(HERE / "ts2_client.mjs"), str(CLIENTS), url, scenario, name, secret(token)])


async def langchain(url: str, token: str, calls: int, *, parallel: bool = False) -> dict[str, dict[str, Any]]:
    argv = [str(CLIENTS / "langchain" / "bin" / "python"), str(HERE / "langchain_client.py"), url, secret(token)]
    return await lines_of([*argv, str(calls), *(["parallel"] if parallel else [])])


def drivers(lines: dict[str, dict[str, Any]], *labels: str) -> list[bool]:
    return [lines[label]["driver"] for label in labels]


async def test_the_ts2_client_on_a_new_connection_per_call_gets_the_driver_once(gateway: str) -> None:
    lines = await ts2(gateway, "sequential", "ts2-sequential")
    assert [lines[f"echo{n}"]["text"] for n in (1, 2, 3, 4)] == ["s1", "s2", "s3", "s4"]
    assert drivers(lines, "echo1", "echo2", "echo3", "echo4") == [True, False, False, False]


async def test_the_ts2_clients_parallel_first_calls_get_the_driver_once(gateway: str) -> None:
    lines = await ts2(gateway, "parallel", "ts2-parallel")  # three calls at once at first contact, then one more
    assert sorted(drivers(lines, "echo1", "echo2", "echo3")) == [False, False, True]
    assert drivers(lines, "echo4") == [False]


async def test_after_a_cancelled_call_the_ts2_client_is_not_new_again(gateway: str) -> None:
    lines = await ts2(gateway, "cancel", "ts2-cancel")
    assert lines["slow"]["cancelled"]  # the client closed that call's stream (and with it its connection)
    assert drivers(lines, "echo1", "echo2", "echo3") == [True, False, False]


async def test_a_tool_the_ts2_client_found_is_listed_on_its_next_connection(gateway: str) -> None:
    lines = await ts2(gateway, "promote", "ts2-promote")
    assert "kitchen.blob" in lines["find"]["text"]
    assert "kitchen.blob" in lines["listed"]["tools"]  # found over one connection, listed over another


async def test_langchains_default_session_per_call_gets_the_driver_once(gateway: str) -> None:
    lines = await langchain(gateway, "lc-seq", 4)
    assert [lines[f"echo{n}"]["text"] for n in (1, 2, 3, 4)] == ["l0", "l1", "l2", "l3"]
    assert drivers(lines, "echo1", "echo2", "echo3", "echo4") == [True, False, False, False]


async def test_langchains_parallel_sessions_at_first_contact_get_the_driver_once(gateway: str) -> None:
    lines = await langchain(gateway, "lc-par", 4, parallel=True)
    assert sorted(drivers(lines, "echo1", "echo2", "echo3", "echo4")) == [False, False, False, True]


async def test_another_identity_or_another_client_name_is_another_first_contact(gateway: str) -> None:
    async def driver(token: str, name: str) -> bool:
        headers = {"Authorization": f"Bearer {secret(token)}"}
        async with http_client(gateway.removesuffix("/mcp"), headers=headers, client_info=_info(name)) as client:
            result = await client.call_tool("kitchen.echo", {"text": "x"})
        return any(h.startswith("[gateway] Driver ") for h in hints_of(result))

    assert await driver("py-a", "app-one")
    assert not await driver("py-a", "app-one")  # the same client again, on a new connection
    assert await driver("py-b", "app-one")  # another identity, the same client name
    assert await driver("py-a", "app-two")  # the same identity, another client name


def _info(name: str) -> Any:
    from mcp import types

    return types.Implementation(name=name, version="1.0")
