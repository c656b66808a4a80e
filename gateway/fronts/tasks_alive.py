"""Tasks whose runner is gone end, instead of staying `working` until their ttl (and a client's `tasks/result`
waiting that long).

* The process running tasks marks them alive in the store every `limits.task_heartbeat_s` (`beating`); a reader
  (`tasks/get`, `tasks/result`, `tasks/list`) that finds a task working whose mark is older than LAPSE_BEATS beats
  settles it `failed` (`lapsed`), once for every replica (`TaskRecords.reap` is one step in the store). Several local
  gateways may share a state folder (a stdio one per client), so the local backend cannot fail every unfinished
  task at start-up: they may be another live process's; it relies on the heartbeat as Redis does.
* A result the store did not take is offered again a few times (`settled`), then the task is stored `failed`.
"""

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio

from gateway.errors import GatewayError
from gateway.store.tasks import TaskRecords

logger = logging.getLogger(__name__)

LAPSE_BEATS = 6
"""Missed beats before a task counts as dead: at least 3 (one late beat is no death); see `TASK_HEARTBEAT_S`."""
LAPSED = (
    "the gateway process running this task stopped (restarted, killed, or cut off from its store) before the call "
    "ended, so its result is lost. Make the call again (it may have had effects already: check before repeating "
    "one that changes things)."
)
UNSTORED = (
    "the call ended, but the gateway could not store its result ({error}); the result is lost. Make the call again "
    "(it did run: check its effects before repeating one that changes things)."
)
SETTLE_RETRIES_S = (0.5, 1.0, 2.0, 4.0)
"""The pauses before storing a result again (a Redis failover or restart takes seconds); then the task fails."""


async def beating(records: TaskRecords, running: Callable[[], Sequence[tuple[str, str]]], period_s: float) -> None:
    """Forever: every `period_s`, mark the tasks `running()` here alive for LAPSE_BEATS periods. A beat the store
    refuses is logged and the next one tried: a lapse spans several beats."""
    while True:
        await anyio.sleep(period_s)
        alive = running()
        if not alive:
            continue
        try:
            await records.beat(alive, period_s * LAPSE_BEATS)
        except (GatewayError, OSError) as exc:  # the store (Redis down, disk full): the heartbeat goes on
            logger.warning("could not mark %d running task(s) alive in %s: %s", len(alive), records.where, exc)


def lapsed(record: dict[str, Any], now: str) -> dict[str, Any]:
    """The `failed` record of a task whose runner is gone."""
    return {**record, "status": "failed", "statusMessage": LAPSED, "lastUpdatedAt": now}


async def settled(
    store: Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]],
    ended: dict[str, Any],
    task_id: str,
) -> dict[str, Any] | None:
    """`store(ended)`, tried again after each of SETTLE_RETRIES_S; if every try failed, `store` of the task
    `failed` with why (a smaller write, which may pass where the result did not). Raises when that fails too: the
    task then stays as stored until its mark lapses, and readers fail it."""
    error: GatewayError | OSError | None = None
    for pause in (0.0, *SETTLE_RETRIES_S):
        await anyio.sleep(pause)
        try:
            return await store(ended)
        except (GatewayError, OSError) as exc:  # the store's (StoreUnavailable, a disk's): tried again, then recorded
            error = exc
            logger.warning("task %s: its result was not stored: %s", task_id, exc)
    failed = {k: v for k, v in ended.items() if k != "result"}
    return await store({**failed, "status": "failed", "statusMessage": UNSTORED.format(error=error)})
