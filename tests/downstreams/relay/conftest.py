"""The relay tests: each module starts its gateway (and servers) once, so their fixtures and the anyio backend
are module-scoped."""

import sys
from collections.abc import Iterator

import pytest

from tests.harness import ROOT, port_file_server


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def relaying_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """The relaying fixture server (`tests/servers/relaying.py`) on one port for a module: legacy SSE on `/sse`
    (+ `/messages/`) and Streamable HTTP on `/mcp`."""
    port_file = tmp_path_factory.mktemp("relaying") / "port"
    argv = [sys.executable, "-m", "tests.servers.relaying", "--transport", "sse", "--port-file", str(port_file)]
    with port_file_server(argv, port_file, cwd=str(ROOT)) as port:
        yield port
