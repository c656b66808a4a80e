"""Durable tasks as files: `<root>/<owned(owner, task_id)>.json`, one JSON record each, with its expiry inside.

`root` is `<state_dir>/.tasks`: no workflow name starts with a dot (`think.format.NAME_PATTERN`), so no run folder,
and no adoption of runs stored before runs had owners (`LocalRuns._adopt`), can land on it.

Written atomically (temp file, fsync, rename) in a worker thread. A running task's record carries `alive_until`
(this machine's clock, seconds since the epoch), moved on by its runner's `beat`; `reap` fails a record whose
mark has passed. Several gateway processes may share one state folder (a stdio gateway per client, and an HTTP
one), so every read-check-write (`settle`, `beat`, `reap`) holds the folder's lock (`locks.py`): a beat in one
process and a reap in another never interleave. Expired records are removed when read or listed, and an owner's
when it creates one (so the folder holds about the live tasks, even of owners who never fetch theirs).

`create` counts the owner's records under the same lock (`TaskCaps`): exact for every process on the folder. It
reads each of them (at most `caps.kept`), as the sweep of expired ones did before the caps.

A failing folder (a full disk, `.tasks` not a folder, no permission) is `StoreUnavailable`, as a Redis that is
down: the client is told without the path, which is logged for the operator.
"""

import json
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import anyio

from gateway.errors import TaskCapReached
from gateway.store.base import OWNED, StoreUnavailable, owned
from gateway.store.local.locks import locked
from gateway.store.local.spills import _read, _write
from gateway.store.tasks import TERMINAL, TaskCaps, minted

logger = logging.getLogger(__name__)
T = TypeVar("T")

FOLDER = ".tasks"
"""The task records' folder in the state folder (a leading dot: never a workflow's)."""
LEGACY = "tasks"
"""Where gateways kept them before: the folder a workflow named `tasks` stored before runs had owners uses."""


def _load(path: Path) -> dict[str, Any] | None:
    data = _read(path)
    if data is None:
        return None
    try:
        record = json.loads(data)
    except ValueError:  # a torn file cannot happen (rename), a foreign one is not a task
        return None
    if not isinstance(record, dict) or record.get("expires", 0) < time.time():
        path.unlink(missing_ok=True)
        return None
    return record


def _store(path: Path, record: dict[str, Any]) -> None:
    _write(path, json.dumps(record).encode())


def moved_from(old: Path, root: Path) -> None:
    """Move task records kept at `old` (the folder gateways used before, `<state_dir>/tasks`) into `root`, at
    start-up.

    Moved rather than left: a task lives at most `limits.task_max_ttl_s` (a day), and a finished one's result must
    stay fetchable across the upgrade for that long; left there it would be "not found", and the folder, named
    like a workflow, would linger. Only task records move (`<owner>~<id>.json`): a workflow named `tasks` stored
    before runs had owners keeps its runs there, for its heir to adopt. A record still running is marked lapsed: the
    gateway that ran it wrote to the old folder, so no process can settle it here, and a reader fails it at once.
    """
    if not old.is_dir():
        return  # the usual case: one stat
    moved = 0
    for path in old.glob(f"*{OWNED}*.json"):
        record = _load(path)
        if record is None:
            continue  # expired (removed), or moved by another process starting at the same time
        if record.get("status") not in TERMINAL:
            record["alive_until"] = 0
        _store(root / path.name, record)
        path.unlink(missing_ok=True)
        moved += 1
    try:
        old.rmdir()
    except OSError:
        pass  # it holds runs of a workflow named `tasks` (or a process of the old version still writes there)
    if moved:
        logger.info("%d task record(s) moved from %s to %s", moved, old, root)


class LocalTasks:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.where = str(root)

    async def _done(self, work: Callable[[], T]) -> T:
        """`work` in a worker thread (the event loop never waits on the disk), its OS errors the store's."""
        try:
            return await anyio.to_thread.run_sync(work)
        except OSError as exc:
            logger.warning("the task records in %s failed: %s", self.root, exc)
            check = "that the `.tasks` folder in `think.state_dir` is a writable folder with room on its disk"
            raise StoreUnavailable("the task records", exc.strerror or type(exc).__name__, check) from exc

    def _path(self, owner: str, task_id: str) -> Path:
        assert minted(task_id)  # a client's id is checked before it comes here: it never reaches a file name
        return self.root / f"{owned(owner, task_id)}.json"

    def _scan(self, owner: str) -> list[dict[str, Any]]:
        """The owner's live records (expired ones are removed on the way)."""
        assert OWNED not in owner  # `owned` refuses it too: the glob cannot reach another owner's files
        found = (_load(p) for p in self.root.glob(f"{owned(owner, '')}*.json")) if self.root.is_dir() else ()
        return [r for r in found if r is not None]

    async def create(
        self, owner: str, task_id: str, record: dict[str, Any], ttl_s: float, *, alive_s: float, caps: TaskCaps
    ) -> None:
        def create() -> None:
            with locked(self.root):  # counted and written as one step for every process on this folder
                now = time.time()
                kept = self._scan(owner)
                if len(kept) >= caps.kept:
                    soonest = min(r.get("expires", now) for r in kept) - now
                    raise TaskCapReached("kept", caps.kept, len(kept), max(soonest, 0.0))
                running = sum(r.get("status") not in TERMINAL and r.get("alive_until", 0) >= now for r in kept)
                if running >= caps.running:
                    raise TaskCapReached("running", caps.running, running)
                _store(self._path(owner, task_id), {**record, "expires": now + ttl_s, "alive_until": now + alive_s})

        await self._done(create)

    async def get(self, owner: str, task_id: str) -> dict[str, Any] | None:
        if not minted(task_id):
            return None
        path = self._path(owner, task_id)
        return await self._done(lambda: _load(path))

    async def settle(self, owner: str, task_id: str, record: dict[str, Any]) -> dict[str, Any] | None:
        def settle() -> dict[str, Any] | None:
            with locked(self.root):
                current = _load(path)
                if current is None or current.get("status") in TERMINAL:
                    return current
                stored = {**record, "expires": current["expires"]}
                _store(path, stored)
                return stored

        if not minted(task_id):
            return None
        path = self._path(owner, task_id)
        return await self._done(settle)

    async def beat(self, tasks: Sequence[tuple[str, str]], alive_s: float) -> None:
        def beat() -> None:
            with locked(self.root):
                for owner, task_id in tasks:
                    path = self._path(owner, task_id)
                    current = _load(path)
                    if current is not None and current.get("status") not in TERMINAL:
                        _store(path, {**current, "alive_until": time.time() + alive_s})

        await self._done(beat)

    async def reap(self, owner: str, task_id: str, failed: dict[str, Any]) -> dict[str, Any] | None:
        def reap() -> dict[str, Any] | None:
            with locked(self.root):
                current = _load(path)
                if current is None or current.get("status") in TERMINAL:
                    return current
                if current.get("alive_until", float("inf")) >= time.time():
                    return current  # its runner beat in time (or it was stored without a mark)
                stored = {**failed, "expires": current["expires"]}
                _store(path, stored)
                return stored

        if not minted(task_id):
            return None
        path = self._path(owner, task_id)
        return await self._done(reap)

    async def list(self, owner: str) -> list[dict[str, Any]]:
        return await self._done(lambda: self._scan(owner))
