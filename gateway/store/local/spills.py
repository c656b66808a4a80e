"""A Think run's spilled captures as files: `<root>/<folder>/<run_id>.files/<name>` (the run's own folder; `folder`
is the run's: `owned(owner, workflow)`).

Written whole (`files.write_whole`) in a worker thread, so the event loop never waits on the disk.
"""

from pathlib import Path

import anyio

from gateway.store.local.files import write_whole

FILES = ".files"
"""A run's own folder (spilled captures, its lock) is `<folder>/<run_id>.files`: no run's `<run_id>.json` can be
named that, whatever its id (a folder named after the id alone collided with run `<id>.json`'s state file)."""


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_whole(path, data)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _drop(folder: Path) -> None:
    # The folder itself stays: it carries the run's cross-process lock (`LocalRuns.locked`).
    for path in folder.glob("*.json.gz") if folder.is_dir() else []:
        path.unlink(missing_ok=True)


class LocalSpills:
    def __init__(self, root: Path) -> None:
        self.root = root

    def folder(self, folder: str, run_id: str) -> Path:
        return self.root / folder / f"{run_id}{FILES}"

    def location(self, folder: str, run_id: str, name: str) -> str:
        return str(self.folder(folder, run_id) / name)

    async def put(self, folder: str, run_id: str, name: str, data: bytes) -> None:
        await anyio.to_thread.run_sync(_write, self.folder(folder, run_id) / name, data)

    async def get(self, folder: str, run_id: str, name: str) -> bytes | None:
        return await anyio.to_thread.run_sync(_read, self.folder(folder, run_id) / name)

    async def drop(self, folder: str, run_id: str) -> None:
        await anyio.to_thread.run_sync(_drop, self.folder(folder, run_id))
