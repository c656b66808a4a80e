"""Run records as files: `<root>/<folder>/<name>.json`, written atomically, version-checked under a folder lock.

All disk work (flock, fsync, rename) runs in a worker thread so the event loop never waits on the disk.
"""

import fcntl
import json
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio

from gateway.store.base import VersionConflict


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """An exclusive lock on a folder, across processes: version check, write and rename are one step."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _sweep(folder: Path, name: str) -> None:
    """Remove temp files a killed writer left behind (only called under `_locked`: no live writer owns one)."""
    pattern = re.compile(re.escape(f".{name}.") + r"[A-Za-z0-9_]{8}\.tmp")
    for stale in folder.glob(f".{name}.*.tmp"):
        if pattern.fullmatch(stale.name):
            stale.unlink(missing_ok=True)


def _version_on_disk(path: Path) -> int:
    try:
        raw = json.loads(path.read_bytes())
    except FileNotFoundError:
        return 0
    version: int = raw.get("version", 0)
    return version


class LocalRuns:
    """A file is always whole: written to a temp file, fsynced, renamed, the folder fsynced.

    Saves into one folder hold its `flock`, so a stale writer in another process gets a conflict too;
    temp files left by a killed writer are removed by the record's next save.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.where = str(root)

    def path(self, folder: str, name: str) -> Path:
        return self.root / folder / f"{name}.json"

    async def get(self, folder: str, name: str) -> bytes | None:
        return await anyio.to_thread.run_sync(self._get, self.path(folder, name))

    @staticmethod
    def _get(path: Path) -> bytes | None:
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None

    async def put(self, folder: str, name: str, data: bytes, expected: int) -> None:
        await anyio.to_thread.run_sync(self._put, self.path(folder, name), data, expected)

    @staticmethod
    def _put(path: Path, data: bytes, expected: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with _locked(path.parent):
            current = _version_on_disk(path)
            if current != expected:
                raise VersionConflict(current)
            _sweep(path.parent, path.stem)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            _fsync_dir(path.parent)

    async def all(self, folder: str) -> list[bytes]:
        return await anyio.to_thread.run_sync(self._all, self.root / folder)

    @staticmethod
    def _all(folder: Path) -> list[bytes]:
        out: list[bytes] = []
        for path in folder.glob("*.json") if folder.is_dir() else []:
            try:
                out.append(path.read_bytes())
            except OSError:
                continue
        return out

    async def delete(self, folder: str, name: str) -> None:
        await anyio.to_thread.run_sync(lambda: self.path(folder, name).unlink(missing_ok=True))
