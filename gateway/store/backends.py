"""The store backends one gateway process uses, chosen by `store.backend` (DESIGN §17)."""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gateway.config import GatewayConfig
from gateway.store.base import (
    CallLog,
    ClientShare,
    Outputs,
    RunRecords,
    SessionShare,
    SharedLoads,
    Spills,
    Usage,
)
from gateway.store.expansions import LearnedExpansions, SampledExpansions
from gateway.store.local.calls import LocalCallLog
from gateway.store.local.clients import LocalClients
from gateway.store.local.expansions import LocalExpansions
from gateway.store.local.outputs import LocalOutputs, OutputStore
from gateway.store.local.runs import LocalRuns
from gateway.store.local.sampled import LocalSampled
from gateway.store.local.signins import LocalSignIns
from gateway.store.local.spills import LocalSpills
from gateway.store.local.tasks import FOLDER, LEGACY, LocalTasks, moved_from
from gateway.store.local.tokens import LocalTokens
from gateway.store.local.usage import LocalUsage
from gateway.store.signins import SignIns
from gateway.store.tasks import TaskRecords
from gateway.store.tokens import Tokens


@dataclass(slots=True)
class Stores:
    where: str
    """`local` or the Redis server (without credentials), for logs and /healthz."""
    runs: RunRecords
    spills: Spills
    outputs: Outputs
    tasks: TaskRecords
    """Durable tasks: a task-augmented call's status and result, readable by every replica sharing the store."""
    loads: SharedLoads | None = None
    """The cross-replica tier of the shared cache; None on the local backend (one process, nothing to share)."""
    sessions: SessionShare | None = None
    """Roaming sessions' shared fields; None on the local backend (they stay in the process's memory)."""
    redis: Any = None
    """The Redis client (redis.asyncio.Redis) shared by the Redis backends, closed by `aclose`."""
    usage: Usage = field(default_factory=LocalUsage)
    """Tool call counts per identity (`auto`'s fill order): in memory on the local backend, shared on Redis."""
    clients: ClientShare | None = None
    """What each client is remembered by across its sessions (`clients.window_s`); None: a window of 0."""
    calls: CallLog = field(default_factory=LocalCallLog)
    """Recent calls and operation counts for the page: in memory on the local backend, every replica's on Redis."""
    signins: SignIns = field(default_factory=LocalSignIns)
    """The page's sign-ins: in memory on the local backend, every replica's on Redis."""
    expansions: LearnedExpansions = field(default_factory=LocalExpansions)
    """Requests learned from use (find_tools then a call): in memory on the local backend, shared on Redis."""
    tokens: Tokens | None = None
    sampled: SampledExpansions = field(default_factory=LocalSampled)
    """Requests a client's model wrote for tools through sampling: in memory on the local backend, shared on Redis."""
    """People's sealed tokens for OAuth-protected servers: files in the state folder, or Redis (None: keeps none)."""

    async def aclose(self) -> None:
        if self.redis is not None:
            await self.redis.aclose()


def open_stores(config: GatewayConfig, heirs: frozenset[str] = frozenset()) -> Stores:
    """Build the backends; Redis connects lazily, so an unreachable one shows up as clear errors per call.

    `heirs`: the owners who adopt runs stored before runs had owners (the local user's: on the local backend)."""
    store, limits, window_s = config.store, config.limits, config.clients.window_s
    if store.backend == "local":
        files = OutputStore(Path(limits.outputs_dir), ttl_s=limits.outputs_ttl_s)
        state = Path(config.think.state_dir)
        local = LocalClients(window_s, maxsize=config.clients.max_clients) if window_s else None
        moved_from(state / LEGACY, state / FOLDER)
        records = LocalTasks(state / FOLDER)
        tokens = LocalTokens(state / "tokens")
        return Stores(
            "local",
            LocalRuns(state, heirs),
            LocalSpills(state),
            LocalOutputs(files),
            records,
            clients=local,
            tokens=tokens,
        )
    # Imported here: the local default never loads redis-py.
    from gateway.store.redis import client as redis_store
    from gateway.store.redis.calls import RedisCallLog
    from gateway.store.redis.clients import RedisClients
    from gateway.store.redis.expansions import RedisExpansions
    from gateway.store.redis.loads import RedisLoads
    from gateway.store.redis.outputs import RedisOutputs
    from gateway.store.redis.runs import RedisRuns
    from gateway.store.redis.sampled import RedisSampled
    from gateway.store.redis.sessions import RedisSessions
    from gateway.store.redis.signins import RedisSignIns
    from gateway.store.redis.spills import RedisSpills
    from gateway.store.redis.tasks import RedisTasks
    from gateway.store.redis.tokens import RedisTokens
    from gateway.store.redis.usage import RedisUsage

    client = redis_store.connect(store.url)
    where = redis_store.where(store.url, store.prefix)
    outputs = RedisOutputs(client, store.prefix, where, ttl_s=limits.outputs_ttl_s, max_bytes=store.outputs_max_bytes)
    runs, spills = RedisRuns(client, store.prefix, where), RedisSpills(client, store.prefix, where)
    breaker = redis_store.Breaker(where)  # one Redis: a failure seen by sessions, clients or usage pauses all
    sessions = RedisSessions(client, store.prefix, where, breaker=breaker)
    clients = RedisClients(client, store.prefix, window_s, breaker=breaker) if window_s else None
    usage = RedisUsage(client, store.prefix, where, breaker=breaker)
    tasks = RedisTasks(client, store.prefix, where)
    loads = RedisLoads(client, store.prefix)
    calls = RedisCallLog(client, store.prefix, where)
    signins = RedisSignIns(client, store.prefix, where)
    learned = RedisExpansions(client, store.prefix, where, breaker=breaker)
    redis_tokens = RedisTokens(client, store.prefix, where)
    return Stores(
        where,
        runs,
        spills,
        outputs,
        tasks,
        loads,
        sessions,
        client,
        usage,
        clients,
        calls,
        signins,
        learned,
        redis_tokens,
        RedisSampled(client, store.prefix, where, breaker=breaker),
    )


def local_runs(root: Path) -> tuple[RunRecords, Spills]:
    """Think's run records and spills as files under `root` (the local backend's; tests and benches use it)."""
    return LocalRuns(root), LocalSpills(root)
