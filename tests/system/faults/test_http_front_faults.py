"""Hostile requests on the HTTP front: clear 4xx answers, bounded memory, and no tracebacks in the log."""

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.harness import kitchen, write_config
from tests.system.faults.wire import logged_http_gateway, peak_rss_bytes, post_chunked

pytestmark = pytest.mark.anyio

LIMIT = 1024 * 1024
MODERN = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": "k.echo",
}


def call_body(params: dict[str, Any], text: str = "hi") -> bytes:
    params = {"name": "k.echo", "arguments": {"text": text}, **params}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).encode()


def modern_meta(extra: dict[str, Any] | None = None) -> dict[str, Any]:
    client = {"name": "raw", "version": "1"}
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientInfo": client}
    return {**meta, "io.modelcontextprotocol/clientCapabilities": {}, **(extra or {})}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[str, int, Path]]:
    directory = tmp_path_factory.mktemp("http-front")
    config = write_config(directory, {"k": kitchen("k")}, limits={"max_message_bytes": LIMIT})
    log = directory / "gateway.log"
    async with logged_http_gateway(config, log) as (base, pid):
        yield base, pid, log


async def post(base: str, body: bytes, headers: dict[str, str] = MODERN) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=10) as http:
        return await http.post(f"{base}/mcp", content=body, headers=headers)


def pieces(total: int, size: int = 256 * 1024) -> Iterator[bytes]:
    for _ in range(total // size):
        yield b"x" * size


# -- params._meta of the wrong type -----------------------------------------------------------------


@pytest.mark.parametrize("meta", [None, 5, "x", [1]], ids=["null", "number", "string", "array"])
async def test_a_tools_call_whose_meta_is_not_an_object_gets_400_invalid_params(
    gateway: tuple[str, int, Path], meta: object
) -> None:
    response = await post(gateway[0], call_body({"_meta": meta}))
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == -32602


async def test_a_tools_call_with_a_proper_meta_is_served(gateway: tuple[str, int, Path]) -> None:
    response = await post(gateway[0], call_body({"_meta": modern_meta()}))
    assert response.status_code == 200, response.text
    assert response.json()["result"]["content"][0]["text"] == "hi"


# -- chunked bodies and max_message_bytes -----------------------------------------------------------


async def test_a_chunked_body_over_max_message_bytes_gets_413_naming_the_limit(gateway: tuple[str, int, Path]) -> None:
    body = call_body({"_meta": modern_meta()}, "y" * (3 * LIMIT))
    status, answer, _ = await post_chunked(
        gateway[0], MODERN, iter([body[i : i + 65536] for i in range(0, len(body), 65536)])
    )
    assert status == 413
    message = json.loads(answer)["error"]["message"]
    assert "1,048,576" in message and "max_message_bytes" in message


async def test_a_chunked_body_under_max_message_bytes_is_served(gateway: tuple[str, int, Path]) -> None:
    body = call_body({"_meta": modern_meta()}, "z" * 10_000)
    status, answer, _ = await post_chunked(gateway[0], MODERN, iter([body[:1000], body[1000:]]))
    assert status == 200 and json.loads(answer)["result"]["content"][0]["text"] == "z" * 10_000


async def test_a_huge_chunked_body_is_refused_before_it_is_buffered(gateway: tuple[str, int, Path]) -> None:
    base, pid, _ = gateway
    before = peak_rss_bytes(pid)
    status, _, sent = await post_chunked(base, MODERN, pieces(48 * LIMIT))
    assert status == 413
    assert peak_rss_bytes(pid) - before < 16 * LIMIT, f"peak memory grew while {sent:,} bytes were sent"


# -- malformed requests: a 4xx with a JSON-RPC error, never a 500 ----------------------------------

LEGACY = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        (b'{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{}}', MODERN),
        (b'{"jsonrpc":"2.0","id":true,"method":"tools/call","params":{}}', MODERN),
        (b'{"jsonrpc":"2.0","id":1,"method":', MODERN),
        (b'{"jsonrpc":"2.0","id":1,"method":', LEGACY),
        (b"[1, 2, 3]", LEGACY),
        (b"", LEGACY),
    ],
    ids=["object-id", "boolean-id", "cut-json-modern", "cut-json-legacy", "array", "empty"],
)
async def test_a_malformed_request_gets_a_4xx_with_a_json_rpc_error(
    gateway: tuple[str, int, Path], body: bytes, headers: dict[str, str]
) -> None:
    response = await post(gateway[0], body, headers)
    assert 400 <= response.status_code < 500, response.text
    assert "error" in response.json()


async def test_requests_for_an_unknown_session_get_404(gateway: tuple[str, int, Path]) -> None:
    unknown = {**LEGACY, "mcp-session-id": "no-such-session", "mcp-protocol-version": "2025-11-25"}
    async with httpx2.AsyncClient(timeout=10) as http:
        deleted = await http.delete(f"{gateway[0]}/mcp", headers=unknown)
        posted = await http.post(f"{gateway[0]}/mcp", content=call_body({}), headers=unknown)
    assert deleted.status_code == 404 and posted.status_code == 404


# -- expected client behaviour is not an error in the log ------------------------------------------


async def test_an_abandoned_body_and_a_bad_host_on_sse_leave_no_traceback_in_the_log(
    gateway: tuple[str, int, Path],
) -> None:
    base, _, log = gateway
    host, port = base.removeprefix("http://").split(":")
    for headers in (MODERN, {"content-type": "application/json", "accept": "application/json, text/event-stream"}):
        async with await anyio.connect_tcp(host, int(port)) as stream:
            head = f"POST /mcp HTTP/1.1\r\nhost: {host}:{port}\r\ncontent-length: 5000\r\n"
            head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
            await stream.send(head.encode() + b"\r\n" + b'{"jsonrpc":')
    async with httpx2.AsyncClient(timeout=10) as http:
        bad_host = await http.get(f"{base}/sse", headers={"host": "evil.example"})
        assert bad_host.status_code in (400, 421)
        for _ in range(3):  # the abandoned requests have been handled by the time these are answered
            assert (await http.get(f"{base}/healthz")).status_code == 200
    text = log.read_text(encoding="utf-8")
    assert "Traceback" not in text and "Exception in ASGI application" not in text, text
