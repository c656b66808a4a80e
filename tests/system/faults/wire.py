"""Fault-suite helpers: the misbehaving server's config entry, a raw stdio line client, raw HTTP uploads."""

import json
import os
import select
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp.types as types
from mcp import Client

from tests.harness import PYTHON, ROOT, free_port, gateway_command, gateway_params, stop, wait_for, write_config

FAULTY = str(ROOT / "tests" / "servers" / "faulty.py")
STARTUP_S = 30.0
"""How long a gateway and its servers may take to start on a busy machine (`tests.harness.served` allows as much)."""


def faulty(*extra: str, **fields: Any) -> dict[str, Any]:
    """A stdio server entry running the misbehaving server (handshake era, so no discovery probe)."""
    return {"transport": "stdio", "command": PYTHON, "args": [FAULTY, *extra], "protocol": "legacy", **fields}


class RawStdio:
    """The gateway's stdio front driven line by line, for messages no SDK client would send."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        assert process.stdin is not None and process.stdout is not None
        self.stdin, self.stdout = process.stdin, process.stdout
        self.pending = b""
        self.notified: list[dict[str, Any]] = []
        """Notifications the gateway sent meanwhile (a list change, a log): a client reads past them."""

    def send(self, line: bytes | dict[str, Any]) -> None:
        self.stdin.write((line if isinstance(line, bytes) else json.dumps(line).encode()) + b"\n")
        self.stdin.flush()

    def receive(self, within_s: float = 10.0) -> dict[str, Any]:
        """The next answer the gateway writes (notifications set aside in `notified`); fails when none comes within
        `within_s`."""
        deadline = time.monotonic() + within_s
        while True:
            while b"\n" not in self.pending:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self.stdout], [], [], left)[0]:
                    raise AssertionError(f"no answer from the gateway within {within_s:g} s")
                chunk = os.read(self.stdout.fileno(), 65536)
                assert chunk, "the gateway closed stdout"
                self.pending += chunk
            line, _, self.pending = self.pending.partition(b"\n")
            message: dict[str, Any] = json.loads(line)
            if "method" in message and "id" not in message:
                self.notified.append(message)
                continue
            return message

    def request(self, request_id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, **({"params": params} if params else {})})
        return self.receive()


@contextmanager
def raw_stdio_gateway(config: Path) -> Iterator[RawStdio]:
    """`gateway serve` on stdio, initialized (handshake era), for raw lines."""
    argv, env = gateway_command(["serve", "--config", str(config), "--log-level", "WARNING"], os.environ)
    process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT, env=env)
    try:
        raw = RawStdio(process)
        client = {"name": "raw", "version": "1"}
        raw.send(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client},
            }
        )
        init = raw.receive(within_s=STARTUP_S)  # the first answer waits for the gateway's start, as `served`'s does
        assert "result" in init, init
        raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield raw
    finally:
        raw.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        raw.stdout.close()


@asynccontextmanager
async def logged_http_gateway(config: Path, log: Path) -> AsyncIterator[tuple[str, int]]:
    """`gateway serve --http` with its log (INFO and up) written to `log`; yields (base URL, pid)."""
    base = f"http://127.0.0.1:{free_port()}"
    argv, env = gateway_command(
        ["serve", "--config", str(config), "--http", base.removeprefix("http://"), "--log-level", "INFO"], os.environ
    )
    with log.open("wb") as sink:
        process = await anyio.open_process(argv, stdout=sink, stderr=sink, cwd=ROOT, env=env)
        try:
            await wait_for(lambda: _healthy_now(base), 30.0, "gateway /healthz")
            yield base, process.pid
        finally:
            await stop(process)


def _healthy_now(base: str) -> bool:
    try:
        return httpx2.get(f"{base}/healthz", timeout=1).status_code == 200
    except httpx2.HTTPError:
        return False


def peak_rss_bytes(pid: int) -> int:
    """The process's peak resident set (VmHWM)."""
    with open(f"/proc/{pid}/status", encoding="utf-8") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmHWM for pid {pid}")


async def post_chunked(base: str, headers: dict[str, str], chunks: Iterator[bytes]) -> tuple[int, bytes, int]:
    """POST /mcp with `Transfer-Encoding: chunked` over a raw socket, sending until the chunks run out or the
    gateway answers or closes; returns (status, body, bytes of body sent)."""
    host, port = base.removeprefix("http://").split(":")
    head = f"POST /mcp HTTP/1.1\r\nhost: {host}:{port}\r\ntransfer-encoding: chunked\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    sent = 0
    answer = bytearray()
    gone = (anyio.BrokenResourceError, anyio.EndOfStream, ConnectionError)
    async with await anyio.connect_tcp(host, int(port)) as stream, anyio.create_task_group() as tg:

        async def read() -> None:
            with suppress(*gone):
                while not _complete(answer):
                    answer.extend(await stream.receive())
            tg.cancel_scope.cancel()  # the gateway answered (or closed): stop sending

        tg.start_soon(read)
        with suppress(*gone):
            await stream.send(head.encode())
            for chunk in chunks:
                await stream.send(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                sent += len(chunk)
            await stream.send(b"0\r\n\r\n")
    status_line, _, rest = bytes(answer).partition(b"\r\n")
    assert status_line, f"no answer after {sent:,} bytes"
    body = rest.partition(b"\r\n\r\n")[2]
    return int(status_line.split()[1]), body, sent


def _complete(answer: bytearray) -> bool:
    """Whether `answer` holds a whole HTTP response with a Content-Length."""
    head, found, body = bytes(answer).partition(b"\r\n\r\n")
    if not found:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return False


FAST_S = 5.0
"""Bound for a fault to be reported: the server's timeout_s is 60 s."""


@asynccontextmanager
async def gateway(tmp_path: Path, *extra: str, **sections: Any) -> AsyncIterator[Client]:
    config = write_config(tmp_path, {"f": faulty(*extra, timeout_s=60)}, **sections)
    async with Client(gateway_params(config), mode="legacy") as client:
        yield client


async def call(
    client: Client, tool: str, args: dict[str, Any] | None = None, *, server: str = "f"
) -> types.CallToolResult:
    with anyio.fail_after(FAST_S):
        return await client.call_tool(f"{server}.{tool}", args or {})


async def status(client: Client) -> dict[str, Any]:
    result = await client.call_tool("gateway.status", {})
    assert result.structured_content is not None
    servers: dict[str, Any] = result.structured_content["servers"]
    return servers
