"""Run records as files: `<root>/<folder>/<name>.json`, written atomically, version-checked under a folder lock.

All disk work (flock, fsync, rename) runs in a worker thread so the event loop never waits on the disk.

Runs stored before they had owners sit in `<root>/<workflow>/`, not in an owner's folder (`owned`): the local
identities (`heirs`: the OS user of stdio and anonymous HTTP) adopt them. The first of them to reach a workflow
here has its old folder renamed to theirs, whole (records, spills, locks), once; no other identity ever sees them.
Only a folder that holds run records and no one's owned records is adopted: gateways before kept every identity's
task records in `<root>/tasks/` (`<owner>~<id>.json`), where a workflow named `tasks` would look for its runs.
"""

import fcntl
import json
import logging
import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from gateway.store.base import OWNED, VersionConflict
from gateway.store.local.files import TEMP_SUFFIX, write_whole
from gateway.store.local.locks import locked
from gateway.store.local.spills import FILES

logger = logging.getLogger(__name__)


def _sweep(folder: Path, name: str) -> None:
    """Remove temp files a killed writer left behind (only called under `locked`: no live writer owns one)."""
    pattern = re.compile(re.escape(f".{name}.") + r"[A-Za-z0-9_]{8}" + re.escape(TEMP_SUFFIX))
    for stale in folder.glob(f".{name}.*{TEMP_SUFFIX}"):
        if pattern.fullmatch(stale.name):
            stale.unlink(missing_ok=True)


def _take(folder: Path) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _version_on_disk(path: Path) -> int:
    try:
        raw = json.loads(path.read_bytes())
    except FileNotFoundError:
        return 0
    version: int = raw.get("version", 0)
    return version


def _holds_runs(folder: Path) -> bool:
    """Whether `folder` holds a workflow's runs from before owners: run records (`<run_id>.json`; no run id
    contains OWNED, the folder's own `~latest.json` starts with it) and nothing owned (a task record,
    `<owner>~<id>.json`, is one identity's, never an heir's)."""
    try:
        records = [name for name in os.listdir(folder) if name.endswith(".json")]
    except OSError:  # none (the usual case), or not a folder
        return False
    owned = any(OWNED in name.removeprefix(OWNED) for name in records)
    return not owned and any(OWNED not in name for name in records)


class LocalRuns:
    """A file is always whole: written to a temp file, fsynced, renamed, the folder fsynced.

    Saves into one folder hold its `flock`, so a stale writer in another process gets a conflict too;
    temp files left by a killed writer are removed by the record's next save.
    """

    def __init__(self, root: Path, heirs: frozenset[str] = frozenset()) -> None:
        self.root = root
        self.where = str(root)
        self.heirs = heirs
        """Owners who adopt the runs stored before runs had owners."""

    def path(self, folder: str, name: str) -> Path:
        return self.root / folder / f"{name}.json"

    def _adopt(self, folder: str) -> None:
        """An heir's first touch of a workflow here: its owner-less runs become theirs (in a worker thread)."""
        owner, _, workflow = folder.partition(OWNED)
        if owner not in self.heirs or (self.root / folder).exists():
            return  # not an heir, or adopted already: one stat
        old = self.root / workflow
        if not _holds_runs(old):
            return  # nothing to adopt, or not runs
        try:
            old.rename(self.root / folder)  # atomic; onto nothing or an empty folder only
        except FileNotFoundError:
            return  # none (or another process adopted them meanwhile)
        except OSError as exc:
            logger.warning("runs in %s stay unowned: %s already has runs (%s); move them by hand", old, folder, exc)
            return
        logger.info("runs in %s adopted by their local owner: now in %s", old, self.root / folder)

    def _get(self, folder: str, name: str) -> bytes | None:
        self._adopt(folder)
        try:
            return self.path(folder, name).read_bytes()
        except FileNotFoundError:
            return None

    async def get(self, folder: str, name: str) -> bytes | None:
        return await anyio.to_thread.run_sync(self._get, folder, name)

    async def put(self, folder: str, name: str, data: bytes, expected: int) -> None:
        await anyio.to_thread.run_sync(self._put, folder, name, data, expected)

    def _put(self, folder: str, name: str, data: bytes, expected: int) -> None:
        self._adopt(folder)
        path = self.path(folder, name)
        with locked(path.parent):
            current = _version_on_disk(path)
            if current != expected:
                raise VersionConflict(current)
            _sweep(path.parent, path.stem)
            write_whole(path, data)

    async def all(self, folder: str) -> list[bytes]:
        return await anyio.to_thread.run_sync(self._all, folder)

    def _all(self, name: str) -> list[bytes]:
        self._adopt(name)
        folder = self.root / name
        out: list[bytes] = []
        for path in folder.glob("*.json") if folder.is_dir() else []:
            try:
                out.append(path.read_bytes())
            except OSError:
                continue
        return out

    async def delete(self, folder: str, name: str) -> None:
        await anyio.to_thread.run_sync(lambda: self.path(folder, name).unlink(missing_ok=True))

    @asynccontextmanager
    async def locked(self, folder: str, name: str) -> AsyncIterator[None]:
        """`flock` on the run's own folder (`<folder>/<name>.files`), so every process on this state folder takes
        its turn from load to save. The wait happens in a worker thread: the loop never blocks on another process."""

        def take() -> int:
            self._adopt(folder)
            return _take(self.root / folder / f"{name}{FILES}")

        # Shielded: a cancel arriving while the thread waits would lose the descriptor, and the lock with it.
        with anyio.CancelScope(shield=True):
            fd = await anyio.to_thread.run_sync(take)
        try:
            yield
        finally:
            os.close(fd)  # releases the lock
