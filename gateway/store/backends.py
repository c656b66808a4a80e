"""The store backends one gateway process uses, chosen by `store.backend` (DESIGN §17)."""

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from gateway.store.base import RunRecords
from gateway.store.runs_local import LocalRuns

if TYPE_CHECKING:
    from gateway.store.loads import RedisLoads


@dataclass(slots=True)
class Stores:
    where: str
    """`local` or the Redis server (without credentials), for logs and /healthz."""
    runs: RunRecords
    loads: "RedisLoads | None" = None
    """The cross-replica tier of the shared cache; None on the local backend (one process, nothing to share)."""
    redis: Any = None
    """The Redis client (redis.asyncio.Redis) shared by the Redis backends, closed by `aclose`."""

    async def aclose(self) -> None:
        if self.redis is not None:
            await self.redis.aclose()


def open_stores(backend: Literal["local", "redis"], url: str, prefix: str, state_dir: Path) -> Stores:
    """Build the backends; Redis connects lazily, so an unreachable one shows up as clear errors per call."""
    if backend == "local":
        return Stores("local", LocalRuns(state_dir))
    # Imported here: the local default never loads redis-py.
    from gateway.store import redis as redis_store
    from gateway.store.loads import RedisLoads
    from gateway.store.runs_redis import RedisRuns

    client = redis_store.connect(url)
    where = redis_store.where(url, prefix)
    return Stores(where, RedisRuns(client, prefix, where), RedisLoads(client, prefix), client)
