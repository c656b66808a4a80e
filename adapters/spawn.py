"""Starting a stdio server whose pipes it holds exactly once, so a server that closes its stdout is seen at once.

uvloop spawns children through libuv: it marks the child's ends of the stdio socketpairs
inheritable and libuv `dup2`s them onto 0 and 1 without closing the originals (uvloop does not
implement `close_fds`). The child then holds a second copy of its stdout under another number, so
when it closes fd 1 and stays alive the gateway never sees EOF and every call waits for its timeout.
Plain `subprocess.Popen` closes every descriptor but 0, 1 and 2 in the child (`close_fds`); the
gateway's ends are read and written on the event loop without threads.
"""

import os
import signal
import subprocess
from collections.abc import Mapping

import anyio
import anyio.to_thread
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from adapters.fds import FdReader, write_nowait

_READ_BYTES = 1024 * 1024


async def open_child(argv: list[str], *, env: Mapping[str, str], cwd: str | None) -> Process:
    """Start `argv` in its own session (process group) with piped stdin/stdout and the gateway's stderr.

    Raises:
        OSError: the executable or working directory is missing or not usable.
    """
    child_in, parent_out = os.pipe()  # non-inheritable: only the dup2'd copies reach the child
    parent_in, child_out = os.pipe()
    try:
        popen = subprocess.Popen(  # noqa: ASYNC220 -- fork+exec blocks as briefly as the loops' own spawn
            argv, stdin=child_in, stdout=child_out, stderr=None, env=dict(env), cwd=cwd, start_new_session=True
        )
    except BaseException:
        for fd in (parent_out, parent_in):
            os.close(fd)
        raise
    finally:
        os.close(child_in)
        os.close(child_out)
    return Child(popen, _PipeWriter(parent_out), _PipeReader(parent_in))


class _PipeReader(ByteReceiveStream):
    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._reader = FdReader(fd)

    async def receive(self, max_bytes: int = _READ_BYTES) -> bytes:
        return await self._reader.receive(max_bytes)

    async def aclose(self) -> None:
        fd = self._reader.fd
        self._reader.detach()  # a task waiting on it wakes with ClosedResourceError
        if fd is not None:
            os.close(fd)


class _PipeWriter(ByteSendStream):
    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd: int | None = fd

    async def send(self, item: bytes) -> None:
        view = memoryview(item)
        while view:
            if self._fd is None:
                raise anyio.ClosedResourceError
            try:
                written = os.write(self._fd, view)
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
                continue
            except BrokenPipeError:
                raise anyio.BrokenResourceError from None
            view = view[written:]

    def send_nowait(self, item: bytes | memoryview) -> int:
        return write_nowait(self._fd, item)

    async def aclose(self) -> None:
        _close(self._fd)
        self._fd = None


def _close(fd: int | None) -> None:
    if fd is not None:
        anyio.notify_closing(fd)  # a task waiting on it wakes with ClosedResourceError
        os.close(fd)


class Child(Process):
    """`anyio.abc.Process` over a `Popen`; exit is awaited on a pidfd (Linux), else in a worker thread."""

    def __init__(self, popen: subprocess.Popen[bytes], stdin: _PipeWriter, stdout: _PipeReader) -> None:
        self._popen = popen
        self._stdin = stdin
        self._stdout = stdout

    async def wait(self) -> int:
        while (code := self._popen.poll()) is None:
            try:
                pidfd = os.pidfd_open(self._popen.pid)
            except (AttributeError, OSError):  # not Linux, or a kernel before 5.3
                return await anyio.to_thread.run_sync(self._popen.wait, abandon_on_cancel=True)
            try:
                # Readable once the process exited; each waiter has its own descriptor (two may wait at once).
                await anyio.wait_readable(pidfd)
            finally:
                os.close(pidfd)
        return code

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def send_signal(self, signal: signal.Signals) -> None:
        if self._popen.poll() is None:
            self._popen.send_signal(signal)

    async def aclose(self) -> None:
        await self._stdin.aclose()
        await self._stdout.aclose()
        try:
            await self.wait()
        except BaseException:
            self.kill()
            with anyio.CancelScope(shield=True):
                await self.wait()
            raise

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        return self._popen.poll()

    @property
    def stdin(self) -> ByteSendStream:
        return self._stdin

    @property
    def stdout(self) -> ByteReceiveStream:
        return self._stdout

    @property
    def stderr(self) -> None:
        return None
