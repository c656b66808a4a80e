"""The interface of durable tasks (2025-11-25 tasks, the 2026-07-28 extension) that every store backend offers
(`local/tasks.py`, `redis/tasks.py`): the records, the caps per owner, and the one rule for a client's task id."""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

TERMINAL = frozenset({"completed", "failed", "cancelled"})
"""Task statuses that never change again (2025-11-25 tasks)."""
_TASK_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def minted(task_id: str) -> bool:
    """Whether `task_id` can be a task's: the gateway mints them (`secrets.token_urlsafe`, this alphabet). A
    client's id that is not one (5,000 characters, `<id>.json/x`, `../`) is no task's, on every backend: it reaches
    no file name and no key."""
    return _TASK_ID.fullmatch(task_id) is not None


@dataclass(frozen=True, slots=True)
class TaskCaps:
    """The most tasks one owner may have at once (`limits.task_max_running`, `limits.task_max_kept`)."""

    running: int
    """Not terminal and marked alive: a call running somewhere."""
    kept: int
    """Stored, finished or not, until their ttl passes."""


class TaskRecords(Protocol):
    """Durable tasks (the wire `Task` fields, plus the stored `result` or `error`), each its `owner`'s: stored
    under `owned(owner, task_id)`, so another identity asking for the same id finds nothing. A record expires
    `ttl_s` after it was created, whatever happens to it meanwhile.

    A task still running carries a liveness mark that the process running it renews (`beat`): a reader that finds
    the mark lapsed knows that process is gone, and `reap` settles the task so, once for every replica. An owner's
    running tasks (for `TaskCaps.running`) are those not terminal whose mark has not lapsed.

    A task id that is not `minted` is unknown to every method: nothing is read, written or keyed with it."""

    where: str

    async def create(
        self, owner: str, task_id: str, record: dict[str, Any], ttl_s: float, *, alive_s: float, caps: TaskCaps
    ) -> None:
        """Store a new record, marked alive for `alive_s` (its runner beats before that runs out), unless the owner
        has `caps.running` tasks running or `caps.kept` kept: counted and stored as one step, on every replica.

        Raises:
            TaskCapReached: nothing was stored.
        """
        ...

    async def get(self, owner: str, task_id: str) -> dict[str, Any] | None:
        """The record (None: expired, unknown, another owner's, or an id that is not `minted`)."""
        ...

    async def settle(self, owner: str, task_id: str, record: dict[str, Any]) -> dict[str, Any] | None:
        """Replace the record while it is not terminal (the first of completion and cancellation wins, across
        replicas); the record now stored (None: expired or unknown)."""
        ...

    async def beat(self, tasks: Sequence[tuple[str, str]], alive_s: float) -> None:
        """The `(owner, task_id)`s still running in this process: each is marked alive for `alive_s` more."""
        ...

    async def reap(self, owner: str, task_id: str, failed: dict[str, Any]) -> dict[str, Any] | None:
        """Replace the record with `failed` if it is not terminal and its mark has lapsed (its runner is gone),
        as one step: of replicas finding it so at once, one writes and all read the same. The record now stored
        (None: expired or unknown); a record stored without a mark is never reaped."""
        ...

    async def list(self, owner: str) -> list[dict[str, Any]]:
        """The owner's live tasks, in no particular order."""
        ...
