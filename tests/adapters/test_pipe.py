"""The NDJSON pipe's writing: lines posted while nothing is queued are written by a callback at the end of the loop's
turn; what the pipe does not take goes to the writer task, and every line arrives whole and in order."""

import json
import os

import anyio
import anyio.to_thread
import pytest

from adapters.fds import FdStream
from adapters.pipe import NdjsonPipe

pytestmark = pytest.mark.anyio


async def test_a_line_bigger_than_the_pipe_and_those_after_it_arrive_whole_and_in_order() -> None:
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    sink = FdStream(read_fd, write_fd)
    pipe = NdjsonPipe(sink, sink, limit=1 << 24)
    big = {"jsonrpc": "2.0", "method": "x", "params": {"blob": "b" * (1 << 20)}}  # far over a pipe's 64 KiB
    received = bytearray()

    def drain() -> None:
        with os.fdopen(read_fd, "rb", closefd=False) as stream:
            while chunk := stream.read1(1 << 16):
                received.extend(chunk)

    try:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(pipe.write)
                tg.start_soon(anyio.to_thread.run_sync, drain)
                await pipe.send_json(
                    {"jsonrpc": "2.0", "method": "first"}
                )  # nothing queued: the turn's flush writes it
                await pipe.send_json(big)  # the pipe takes part of it; the writer task writes the rest
                for n in range(3):
                    await pipe.send_json({"jsonrpc": "2.0", "method": f"after-{n}"})  # queued behind it
                await pipe.drained()
                os.close(write_fd)
                write_fd = -1
                tg.cancel_scope.cancel()
    finally:
        if write_fd != -1:
            os.close(write_fd)
    lines = [json.loads(line) for line in bytes(received).splitlines()]
    assert [m["method"] for m in lines] == ["first", "x", "after-0", "after-1", "after-2"]
    assert lines[1] == big
    os.close(read_fd)
