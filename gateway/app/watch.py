"""What makes the gateway reload its config by itself: SIGHUP, and a change of the file's content."""

import hashlib
import itertools
import logging
import signal
import time
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio

from gateway.config.reading import read_bytes
from gateway.errors import ConfigError

logger = logging.getLogger(__name__)

Reload = Callable[[], Awaitable[Any]]
WATCH_S = 0.25
"""How often the config file is stat'ed (mtime, size, inode); only a changed stat reads and hashes it."""
HASH_EVERY = 4
"""Every this many stats the file is hashed even if its stat did not move."""
SETTLE_S = 0.1
"""A changed file is reloaded once its stat held still this long (an editor may be mid-write)."""


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size, stat.st_ino


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(read_bytes(path)).hexdigest()
    except ConfigError:  # gone, unreadable, not a file, too big: nothing to reload (SIGHUP would say why)
        return None


async def watch_signal(reload: Reload) -> None:
    """Reload on SIGHUP."""
    with ExitStack() as stack:
        try:
            signals = stack.enter_context(anyio.open_signal_receiver(signal.SIGHUP))
        except RuntimeError as exc:  # a gateway run off the main thread (embedded) gets no signals
            logger.warning("reload: no SIGHUP here (%s); a change of the file or POST /reload still reloads", exc)
            return
        async for _ in signals:
            logger.info("reload: SIGHUP")
            await reload()


async def watch_file(path: Path, reload: Reload) -> None:
    """Reload when the file's content changed (polled: no inotify dependency for one file)."""
    stamp, seen = _stamp(path), _digest(path)
    for tick in itertools.count(1):
        await anyio.sleep(WATCH_S)  # no inotify dependency for one file
        # The content is hashed when the stat moved, and once a second anyway: a same-size rewrite within the
        # filesystem's timestamp granularity leaves the stat as it was.
        if (now := _stamp(path)) == stamp and tick % HASH_EVERY:
            continue
        while now != stamp:  # an editor may be mid-write: wait until the file holds still
            stamp = now
            await anyio.sleep(SETTLE_S)
            now = _stamp(path)
        digest = await anyio.to_thread.run_sync(_digest, path)
        if digest is None or digest == seen:  # gone, or touched without a change
            continue
        seen = digest
        written = f"{time.time() - stamp[0] / 1e9:.2f} s after its last write" if stamp else "removed"
        logger.info("reload: %s changed (seen %s)", path, written)
        await reload()
