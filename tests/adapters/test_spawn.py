"""Starting a stdio server (`open_child`): its pipes held once, so a child that closes its stdout while it lives is
seen at once (EOF), not after a call's timeout; its own session (process group); a missing program is an OSError
naming it; and two tasks may wait for one child's exit."""

import os
import sys

import anyio
import pytest
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from adapters.spawn import open_child

pytestmark = pytest.mark.anyio


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


async def started(code: str) -> tuple[Process, ByteSendStream, ByteReceiveStream]:
    child = await open_child(python(code), env=os.environ, cwd=None)
    assert child.stdin is not None and child.stdout is not None
    return child, child.stdin, child.stdout


async def test_a_child_echoes_through_its_pipes_and_exits_when_its_stdin_closes() -> None:
    child, stdin, stdout = await started("import sys; sys.stdout.write(sys.stdin.read().upper())")
    with anyio.fail_after(20):
        await stdin.send(b"hello")
        await stdin.aclose()
        got = b""
        try:
            while True:
                got += await stdout.receive()
        except anyio.EndOfStream:
            pass
        assert got == b"HELLO"
        assert await child.wait() == 0
        await child.aclose()
    assert child.returncode == 0


async def test_a_child_that_closes_its_stdout_but_lives_on_is_seen_at_once() -> None:
    # The uvloop trap: a second copy of the child's stdout would hide this EOF until the child exits.
    code = "import os, sys, time; os.close(1); sys.stdin.read(); time.sleep(0)"
    child, _, stdout = await started(code)
    with anyio.fail_after(20):
        with pytest.raises(anyio.EndOfStream):
            await stdout.receive()
        assert child.returncode is None  # still alive: it waits for its stdin
        await child.aclose()  # closing stdin lets it end
    assert child.returncode == 0


async def test_the_child_leads_its_own_process_group() -> None:
    child = await open_child(python("import sys; sys.stdin.read()"), env=os.environ, cwd=None)
    try:
        assert os.getpgid(child.pid) == child.pid != os.getpgid(0)
    finally:
        with anyio.fail_after(20):
            await child.aclose()


async def test_two_tasks_waiting_for_one_childs_exit_both_get_its_code() -> None:
    child, stdin, _ = await started("import sys; sys.stdin.read(); sys.exit(3)")
    codes: list[int] = []
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            for _ in range(2):
                tg.start_soon(lambda: _wait(child, codes))
            await anyio.wait_all_tasks_blocked()
            await stdin.aclose()
        await child.aclose()
    assert codes == [3, 3]


async def _wait(child: Process, codes: list[int]) -> None:
    codes.append(await child.wait())


async def test_a_missing_program_or_folder_is_an_os_error_and_leaks_no_descriptor() -> None:
    before = len(os.listdir("/proc/self/fd"))
    with pytest.raises(FileNotFoundError):
        await open_child(["/nowhere/mcp-server"], env=os.environ, cwd=None)
    with pytest.raises(FileNotFoundError):
        await open_child(python("pass"), env=os.environ, cwd="/nowhere/folder")
    assert len(os.listdir("/proc/self/fd")) == before
