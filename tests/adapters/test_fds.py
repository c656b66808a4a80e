"""The pipe reader the event loop keeps watching: chunks in order, end of stream, a detach while waiting, the
back pressure when nobody reads, and nothing lost by a reader cancelled as its chunk arrives."""

import os
from collections.abc import Iterator

import anyio
import pytest

from adapters.fds import FdReader

pytestmark = pytest.mark.anyio

PIPE_BYTES = 1 << 16


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    os.set_blocking(write_fd, False)
    yield read_fd, write_fd
    for fd in (read_fd, write_fd):
        try:
            os.close(fd)
        except OSError:
            pass  # closed by the test


async def test_chunks_written_while_the_reader_waits_arrive_in_order_then_the_end(pipe: tuple[int, int]) -> None:
    read_fd, write_fd = pipe
    reader = FdReader(read_fd)
    got: list[bytes] = []

    async def read_all() -> None:
        while True:
            try:
                got.append(await reader.receive(1024))
            except anyio.EndOfStream:
                return

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(read_all)
            for n in range(5):
                await anyio.wait_all_tasks_blocked()  # the reader waits on the loop's watch
                os.write(write_fd, f"line {n}\n".encode())
            await anyio.wait_all_tasks_blocked()
            os.close(write_fd)
    assert b"".join(got) == b"".join(f"line {n}\n".encode() for n in range(5))
    reader.detach()


async def test_a_detach_wakes_a_waiting_reader_with_closed_resource(pipe: tuple[int, int]) -> None:
    reader = FdReader(pipe[0])
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:

            async def wait() -> None:
                with pytest.raises(anyio.ClosedResourceError):
                    await reader.receive(1024)

            tg.start_soon(wait)
            await anyio.wait_all_tasks_blocked()
            reader.detach()
    with pytest.raises(anyio.ClosedResourceError):
        await reader.receive(1024)


async def test_data_nobody_waits_for_stays_in_the_pipe_and_its_writer_is_held_back(pipe: tuple[int, int]) -> None:
    read_fd, write_fd = pipe
    reader = FdReader(read_fd)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:

            async def first() -> None:
                assert await reader.receive(16) == b"a" * 16

            tg.start_soon(first)
            await anyio.wait_all_tasks_blocked()
            os.write(write_fd, b"a" * 16)
        # Nobody reads now: the loop stops watching at the next readiness, and the pipe fills up to its size.
        os.write(write_fd, b"b")
        await anyio.wait_all_tasks_blocked()
        written = 0
        with pytest.raises(BlockingIOError):
            while True:
                written += os.write(write_fd, b"c" * PIPE_BYTES)
        assert await reader.receive(1) == b"b"  # read straight from the pipe, in order
        rest = b""
        while len(rest) < written:
            rest += await reader.receive(PIPE_BYTES)
        assert rest == b"c" * written
    reader.detach()


async def test_a_reader_cancelled_as_its_chunk_arrives_leaves_it_for_the_next_read(pipe: tuple[int, int]) -> None:
    read_fd, write_fd = pipe
    reader = FdReader(read_fd)
    got: list[bytes] = []
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:

            async def cancelled(scope: anyio.CancelScope) -> None:
                with scope:
                    got.append(await reader.receive(1024))

            async def cancel_as_it_arrives(scope: anyio.CancelScope) -> None:
                await anyio.wait_all_tasks_blocked()
                os.write(write_fd, b"kept\n")
                scope.cancel()  # before the loop sees the pipe readable: the watch must not read for nobody

            scope = anyio.CancelScope()
            tg.start_soon(cancelled, scope)
            tg.start_soon(cancel_as_it_arrives, scope)
        if not got:
            got.append(await reader.receive(1024))
    assert got == [b"kept\n"]
    reader.detach()
