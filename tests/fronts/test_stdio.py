"""The stdio front of a real gateway process, driven over raw pipes: lines that are not messages get answers."""

import json
import os
import pty
import signal
import termios
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from tests.harness import gateway_params, kitchen, write_config

pytestmark = pytest.mark.anyio

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}


class Pipe:
    """Newline-delimited JSON over a gateway's stdin/stdout."""

    def __init__(self, process: Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.stdin = process.stdin
        self.stdout = BufferedByteReceiveStream(process.stdout)

    async def send_line(self, line: str) -> None:
        await self.stdin.send(line.encode() + b"\n")

    async def send(self, message: dict[str, Any]) -> None:
        await self.send_line(json.dumps(message))

    async def receive(self) -> dict[str, Any]:
        """The next message that is not a notification (the gateway may push list changes at any time)."""
        with anyio.fail_after(20):
            while True:
                message: dict[str, Any] = json.loads(await self.stdout.receive_until(b"\n", 1_000_000))
                if "id" in message:
                    return message


@asynccontextmanager
async def raw_gateway(tmp_path: Path, servers: dict[str, Any] | None = None, **sections: Any) -> AsyncIterator[Pipe]:
    params = gateway_params(write_config(tmp_path, servers or {"k": kitchen("k")}, **sections))
    process = await anyio.open_process([params.command, *params.args], cwd=params.cwd, env=params.env, stderr=None)
    async with process:
        pipe = Pipe(process)
        try:
            yield pipe
        finally:
            with anyio.CancelScope(shield=True), anyio.fail_after(15):
                await pipe.stdin.aclose()  # EOF on stdin is how a stdio client says goodbye
                await process.wait()


async def test_a_line_that_is_not_json_gets_a_parse_error_with_id_null_and_the_session_continues(
    tmp_path: Path,
) -> None:
    async with raw_gateway(tmp_path) as pipe:
        await pipe.send_line("{not json")
        error = await pipe.receive()
        assert error["id"] is None and error["error"]["code"] == -32700
        await pipe.send(INITIALIZE)
        initialized = await pipe.receive()
        assert initialized["id"] == 1 and initialized["result"]["protocolVersion"] == "2025-11-25"
        await pipe.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await pipe.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        listed = await pipe.receive()
        assert listed["id"] == 2 and "k.echo" in {t["name"] for t in listed["result"]["tools"]}


async def test_a_json_line_that_is_not_json_rpc_gets_an_invalid_request_error(tmp_path: Path) -> None:
    async with raw_gateway(tmp_path) as pipe:
        await pipe.send_line('{"hello": "world"}')
        error = await pipe.receive()
        assert error["id"] is None and error["error"]["code"] == -32600
        await pipe.send({**INITIALIZE, "id": 7})
        assert (await pipe.receive())["id"] == 7


async def test_a_message_over_the_limit_is_answered_with_its_own_id_and_the_session_continues(
    tmp_path: Path,
) -> None:
    """The oversized line is never buffered whole, yet its caller gets an answer instead of waiting forever."""
    async with raw_gateway(tmp_path, limits={"max_message_bytes": 100_000}) as pipe:
        await pipe.send(INITIALIZE)
        await pipe.receive()
        await pipe.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        big = {"name": "k.measure", "arguments": {"text": "y" * 200_000}}
        await pipe.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": big})
        refused = await pipe.receive()
        assert refused["id"] == 7 and refused["error"]["code"] == -32600
        assert "100,000" in refused["error"]["message"] and "max_message_bytes" in refused["error"]["message"]
        small = {"name": "k.measure", "arguments": {"text": "y" * 1000}}
        await pipe.send({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": small})
        answered = await pipe.receive()
        assert answered["id"] == 8 and answered["result"]["content"][0]["text"] == "received 1000 chars"


@contextmanager
def interruptible() -> Iterator[None]:
    """Processes started inside get Ctrl-C (SIGINT) as a terminal's foreground job does, whatever this worker
    inherited: not ignored (an ignored signal stays ignored across exec; a handler does not) and not blocked."""
    handler = signal.getsignal(signal.SIGINT)
    blocked = signal.SIGINT in signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
    if handler is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if handler is signal.SIG_IGN:
            signal.signal(signal.SIGINT, handler)
        if blocked:
            signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])


async def ended_by(
    sent: signal.Signals, tmp_path: Path, stdin: int, stdout: int, serving: Callable[[Process], Awaitable[None]]
) -> None:
    """A gateway on `stdin`/`stdout` ends at once on the signal `sent` once `serving` saw it serve, though its client
    never closed stdin."""
    params = gateway_params(write_config(tmp_path, {}))
    argv = [params.command, *params.args, "--log-level", "INFO"]
    with interruptible():
        process = await anyio.open_process(argv, cwd=params.cwd, env=params.env, stdin=stdin, stdout=stdout)
    async with process:
        try:
            with anyio.fail_after(20):
                await serving(process)
            process.send_signal(sent)
            with anyio.fail_after(15):  # the SDK's stdio reader waited for another line here, for good
                assert await process.wait() == 0
        finally:
            if process.returncode is None:
                process.kill()


async def test_a_gateway_on_a_terminal_serves_it_ends_on_ctrl_c_and_leaves_the_terminal_blocking(
    tmp_path: Path,
) -> None:
    leader, terminal = pty.openpty()
    attributes = termios.tcgetattr(terminal)
    attributes[3] &= ~termios.ECHO  # the request is not echoed back among the answers
    termios.tcsetattr(terminal, termios.TCSANOW, attributes)
    os.set_blocking(leader, False)

    async def answers(_: Process) -> None:
        os.write(leader, json.dumps(INITIALIZE).encode() + b"\n")
        heard = b""
        while b'"serverInfo"' not in heard or not heard.endswith(b"\n"):
            await anyio.wait_readable(leader)
            heard += os.read(leader, 65536)
            assert os.get_blocking(terminal)  # the shell's description of the terminal, shared with the gateway

    try:
        await ended_by(signal.SIGINT, tmp_path, terminal, terminal, answers)  # Ctrl-C
    finally:
        os.close(leader)
        os.close(terminal)


async def test_a_gateway_whose_stdout_is_not_a_pipe_ends_on_sigterm_with_its_client_still_there(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()  # the client's end stays open: it never says goodbye

    async def ready(process: Process) -> None:
        assert process.stderr is not None
        logged = BufferedByteReceiveStream(process.stderr)
        while b"gateway ready" not in await logged.receive_until(b"\n", 1_000_000):
            pass

    null = os.open(os.devnull, os.O_WRONLY)
    try:
        await ended_by(signal.SIGTERM, tmp_path, read_end, null, ready)
    finally:
        for fd in (null, read_end, write_end):
            os.close(fd)
