"""Acceptance matrix "the connection never drops": payload size x direction x front x downstream transport.

Every cell ends in a whole result, a spilled result (preview + link + hint, readable with gateway.read_output)
or a guidance result (isError naming the size and the limit), and the next call on the same session works.
One gateway per front, with the kitchen server behind it three ways: `s` (stdio), `h` (Streamable HTTP) and
`e` (legacy SSE); `h` and `e` share one kitchen HTTP server for the whole module. Default gateway limits.
"""

import logging
import re
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import anyio
import mcp.types as types
import pytest
from mcp import Client

from tests.harness import (
    KITCHEN,
    PYTHON,
    gateway_params,
    hints_of,
    http_client,
    http_gateway,
    kitchen,
    port_file_server,
    text_of,
    write_config,
)

pytestmark = pytest.mark.anyio
logger = logging.getLogger(__name__)

Front = Literal["stdio", "http"]
Direction = Literal["response", "request"]
Outcome = Literal["whole", "spilled", "guidance"]

MAX_INLINE_BYTES = 20_000  # limits.max_inline_bytes default
MAX_REQUEST_BYTES = 10 * 1024 * 1024  # limits.max_request_bytes default
CELL_TIMEOUT_S = 60
SIZES = {"1KB": 1_000, "1MB": 1_000_000, "10MB": 10_000_000, "11MB": 11_000_000}
DOWNSTREAMS = {"s": "stdio", "h": "http", "e": "sse"}
OUTPUT_LINK = re.compile(r"gateway://outputs/([0-9a-f]{24})")


@dataclass(frozen=True)
class Cell:
    server: str
    direction: Direction
    size: str
    expect: Outcome

    @property
    def n(self) -> int:
        return SIZES[self.size]

    def __str__(self) -> str:
        return f"{DOWNSTREAMS[self.server]:>5} {self.direction:<8} {self.size:>4}"


def _expected(direction: Direction, n: int) -> Outcome:
    if direction == "response":
        return "spilled" if n > MAX_INLINE_BYTES else "whole"
    # The size guard measures the arguments as JSON: {"text":"yyy..."}.
    return "guidance" if n + len('{"text":""}') > MAX_REQUEST_BYTES else "whole"


PLAN: tuple[tuple[Direction, tuple[str, ...]], ...] = (
    ("response", ("1KB", "1MB", "10MB")),
    ("request", ("1KB", "1MB", "10MB", "11MB")),
)
CELLS = [
    Cell(server, direction, size, _expected(direction, SIZES[size]))
    for server in DOWNSTREAMS
    for direction, sizes in PLAN
    for size in sizes
]


def test_the_matrix_expects_what_the_defaults_imply() -> None:
    outcomes = {(c.direction, c.size): c.expect for c in CELLS}
    assert outcomes == {
        ("response", "1KB"): "whole",
        ("response", "1MB"): "spilled",
        ("response", "10MB"): "spilled",
        ("request", "1KB"): "whole",
        ("request", "1MB"): "whole",
        ("request", "10MB"): "whole",  # 10,000,011 bytes of JSON < 10 MiB: forwarded
        ("request", "11MB"): "guidance",
    }


@pytest.fixture(scope="module")
def kitchen_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """One kitchen server serving Streamable HTTP (/mcp) and legacy SSE (/sse); yields its port."""
    port_file = tmp_path_factory.mktemp("kitchen") / "port"
    argv = [PYTHON, KITCHEN, "--name", "k", "--transport", "http", "--port", "0", "--port-file", str(port_file)]
    with port_file_server(argv, port_file) as port:
        yield port


@asynccontextmanager
async def gateway_session(front: Front, config: Path) -> AsyncIterator[Client]:
    if front == "stdio":
        async with Client(gateway_params(config), read_timeout_seconds=120) as client:
            yield client
    else:
        async with http_gateway(config) as base, http_client(base, read_timeout_seconds=120) as client:
            yield client


def _fail(cell: Cell, what: str, result: types.CallToolResult) -> AssertionError:
    head = text_of(result)[:160].replace("\n", " ")
    return AssertionError(f"expected {cell.expect}: {what}; is_error={result.is_error}, text starts {head!r}")


async def _check_spilled(client: Client, cell: Cell, result: types.CallToolResult) -> None:
    links = [c for c in result.content if isinstance(c, types.ResourceLink)]
    if result.is_error or len(links) != 1 or not (match := OUTPUT_LINK.fullmatch(links[0].uri)):
        raise _fail(cell, "one resource_link gateway://outputs/<id>", result)
    output_id = match.group(1)
    preview = text_of(result)
    if "x" * 100 not in preview or len(preview.encode()) > MAX_INLINE_BYTES:
        raise _fail(cell, f"a preview of at most {MAX_INLINE_BYTES:,} bytes", result)
    if not any(output_id in hint for hint in hints_of(result)):
        raise _fail(cell, f"a [gateway] hint naming {output_id}", result)
    page = await client.call_tool("gateway.read_output", {"id": output_id, "offset": 0, "length": 100})
    text = text_of(page)
    if page.is_error or not text.endswith("\n" + "x" * 100) or f"of {cell.n:,}" not in text:
        raise AssertionError(f"gateway.read_output of {output_id}: is_error={page.is_error}, {text[:160]!r}")


async def _run_cell(client: Client, cell: Cell) -> Outcome:
    """Make the cell's call, check it ended as expected, then check the session still takes a call."""
    if cell.direction == "response":
        result = await client.call_tool(f"{cell.server}.blob", {"n": cell.n})
    else:
        result = await client.call_tool(f"{cell.server}.measure", {"text": "y" * cell.n})
    if cell.expect == "whole":
        want = "x" * cell.n if cell.direction == "response" else f"received {cell.n} chars"
        if result.is_error or text_of(result) != want:
            raise _fail(cell, f"the whole result ({len(want):,} chars)", result)
    elif cell.expect == "spilled":
        await _check_spilled(client, cell, result)
    else:
        size, text = cell.n + len('{"text":""}'), text_of(result)
        if not result.is_error or f"{size:,}" not in text or f"{MAX_REQUEST_BYTES:,}" not in text:
            raise _fail(cell, f"isError naming {size:,} bytes and the {MAX_REQUEST_BYTES:,}-byte limit", result)
    after = await client.call_tool(f"{cell.server}.echo", {"text": f"after {cell}"})
    if after.is_error or text_of(after) != f"after {cell}":
        raise AssertionError(f"the next call failed: is_error={after.is_error}, {text_of(after)[:160]!r}")
    return cell.expect


@pytest.mark.parametrize("front", ["stdio", "http"])
async def test_the_connection_never_drops(front: Front, kitchen_http: int, tmp_path: Path) -> None:
    base = f"http://127.0.0.1:{kitchen_http}"
    servers = {
        "s": kitchen("s"),
        "h": {"transport": "http", "url": f"{base}/mcp"},
        "e": {"transport": "sse", "url": f"{base}/sse"},
    }
    config = write_config(tmp_path, servers)
    rows: list[str] = []
    failed = 0
    async with gateway_session(front, config) as client:
        for cell in CELLS:
            started = time.monotonic()
            try:
                with anyio.fail_after(CELL_TIMEOUT_S):
                    observed = await _run_cell(client, cell)
                status = f"ok {observed}"
            except TimeoutError:
                status, failed = f"FAIL hang: no answer within {CELL_TIMEOUT_S} s", failed + 1
            except Exception as exc:  # noqa: BLE001 -- every cell's failure goes into the table, then one assert
                status, failed = f"FAIL {type(exc).__name__}: {exc}", failed + 1
            rows.append(f"{front:>5} -> {cell} | {cell.expect:<8} | {time.monotonic() - started:5.2f} s | {status}")
            logger.info("%s", rows[-1])
        status_result = await client.call_tool("gateway.status", {})
    table = "\n".join(["front -> downstream direction size | expected | time | observed", *rows])
    assert not failed, f"{failed} of {len(CELLS)} cells failed:\n{table}"
    # No downstream connection was lost and silently re-established along the way.
    servers = (status_result.structured_content or {})["servers"]
    health = {name: (s["state"], s["restarts"]) for name, s in servers.items() if name in DOWNSTREAMS}
    assert health == dict.fromkeys(DOWNSTREAMS, ("up", 0))
