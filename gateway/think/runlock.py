"""A run's cross-process lock: `flock` on the run's own folder (`<workflow>/<run_id>.files`).

Every engine that writes a run (any process on the machine) holds it from load to save, so two gateways
on one state folder take turns instead of failing each other with STATE_CONFLICT. The wait happens in a
worker thread: the event loop never blocks on another process.
"""

import fcntl
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio


def _take(folder: Path) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    return fd


@asynccontextmanager
async def held(folder: Path) -> AsyncIterator[None]:
    # Shielded: a cancel arriving while the thread waits would lose the descriptor, and the lock with it.
    with anyio.CancelScope(shield=True):
        fd = await anyio.to_thread.run_sync(_take, folder)
    try:
        yield
    finally:
        os.close(fd)  # releases the lock
