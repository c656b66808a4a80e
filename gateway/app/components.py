"""The gateway's component tasks (the reloader, the call log): one that dies is shown, not spread."""

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio.abc

from gateway.errors import describe

logger = logging.getLogger(__name__)


class Components:
    """Runs component tasks in the gateway's task group. Left to end the group, a component's error would stop
    every server while `/healthz` still said ok and every call hung; here it is kept in `died` (`/healthz` turns
    `degraded`, 503) and serving goes on."""

    def __init__(self) -> None:
        self.died: dict[str, str] = {}
        """Component tasks that ended with an error, and why."""

    async def run(
        self, name: str, run: Callable[..., Awaitable[None]], *, task_status: anyio.abc.TaskStatus[None]
    ) -> None:
        try:
            await run(task_status=task_status)
        except Exception as exc:
            self.died[name] = describe(exc)
            logger.exception("%s stopped; the gateway serves on without it (restart it to recover)", name)


def health(
    servers: dict[str, dict[str, Any]], died: dict[str, str], last_reload: dict[str, Any] | None
) -> dict[str, Any]:
    """`/healthz`: ok while every server is up or idle and no component died; else degraded."""
    ok = all(s["state"] in ("up", "idle") for s in servers.values()) and not died
    extra = {**({"died": dict(died)} if died else {}), **({"last_reload": last_reload} if last_reload else {})}
    return {"status": "ok" if ok else "degraded", "servers": servers, **extra}
