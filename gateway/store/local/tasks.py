"""Durable tasks as files: `<root>/<owned(owner, task_id)>.json`, one JSON record each, with its expiry inside.

Written atomically (temp file, fsync, rename) in a worker thread. `settle` is a read-check-write under one lock
per process: the local backend serves one gateway process (replicas share Redis, `gateway.store.redis.tasks`).
Expired records are removed when read or listed, and an owner's when it creates one (so the folder holds about
the live tasks, even of owners who never fetch theirs).
"""

import json
import time
from pathlib import Path
from typing import Any

import anyio

from gateway.store.base import OWNED, TERMINAL, owned
from gateway.store.local.spills import _read, _write


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


class LocalTasks:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.where = str(root)
        self._lock = anyio.Lock()

    def _path(self, owner: str, task_id: str) -> Path:
        return self.root / f"{owned(owner, task_id)}.json"

    async def create(self, owner: str, task_id: str, record: dict[str, Any], ttl_s: float) -> None:
        stored = {**record, "expires": time.time() + ttl_s}
        await anyio.to_thread.run_sync(_write, self._path(owner, task_id), json.dumps(stored).encode())
        await self.list(owner)  # drops the owner's expired records

    async def get(self, owner: str, task_id: str) -> dict[str, Any] | None:
        return await anyio.to_thread.run_sync(_load, self._path(owner, task_id))

    async def settle(self, owner: str, task_id: str, record: dict[str, Any]) -> dict[str, Any] | None:
        path = self._path(owner, task_id)
        async with self._lock:
            current = await anyio.to_thread.run_sync(_load, path)
            if current is None or current.get("status") in TERMINAL:
                return current
            stored = {**record, "expires": current["expires"]}
            await anyio.to_thread.run_sync(_write, path, json.dumps(stored).encode())
            return stored

    async def list(self, owner: str) -> list[dict[str, Any]]:
        def scan() -> list[dict[str, Any]]:
            found = (_load(p) for p in self.root.glob(f"{owned(owner, '')}*.json")) if self.root.is_dir() else ()
            return [r for r in found if r is not None]

        assert OWNED not in owner  # `owned` refuses it too: the glob cannot reach another owner's files
        return await anyio.to_thread.run_sync(scan)
