"""What every store backend shares: the errors it raises, the rule that names what a person creates, and the
interfaces (DESIGN §16, §17).

Backends store bytes under `(folder, name)` keys with a version counter; the typed layer above them
(`gateway.think.state.StateStore`) owns the models and the messages the model reads.
"""

import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol

from gateway.errors import GatewayError

if TYPE_CHECKING:
    from gateway.store.outputs import Page, Spilled


OWNED = "~"
"""Between an owner and a name (no workflow name, run id or output id contains it)."""
_OWNER = re.compile(r"[A-Za-z0-9_-]{1,64}")


def owned(owner: str, name: str) -> str:
    """The one rule of ownership (DESIGN §16), for every backend: what a person creates (a Think run's records,
    spills and lock, a spilled output) is stored under its name prefixed with its owner (`Identity.owner`). Another
    identity asking for the same name asks for another key and finds nothing, exactly as for a name never used, so
    no tool checks ownership and none can leak whether another's exists."""
    if not _OWNER.fullmatch(owner):
        raise ValueError(f"not an owner: {owner!r}")  # a bug: every caller has an identity
    return f"{owner}{OWNED}{name}"


class StoreUnavailable(GatewayError):
    """The store cannot be reached or refused the operation; nothing was changed by the failed call. `check`: what
    an operator looks at if it persists (Redis's by default)."""

    def __init__(
        self,
        where: str,
        detail: str,
        check: str = "that the store is running and `store.url` in the config points at it",
    ) -> None:
        self.where = where
        super().__init__(
            f"The gateway's store ({where}) is unavailable: {detail}. Nothing was changed. Retry in a few "
            f"seconds; if it persists, check {check}."
        )


class VersionConflict(Exception):
    """A compare-and-set found another version than the writer expected."""

    def __init__(self, current: int) -> None:
        self.current = current
        super().__init__(f"stored version is {current}")


class RunRecords(Protocol):
    """Durable records with a version counter: `put` is a compare-and-set, atomic across processes and replicas."""

    where: str
    """A description for messages and logs (a folder, or `redis://host:port/db prefix`)."""

    async def get(self, folder: str, name: str) -> bytes | None: ...

    async def put(self, folder: str, name: str, data: bytes, expected: int) -> None:
        """Store `data` as version `expected + 1`. Raises VersionConflict when the record is not at `expected`."""
        ...

    async def all(self, folder: str) -> list[bytes]:
        """Every record of a folder, in no particular order."""
        ...

    async def delete(self, folder: str, name: str) -> None: ...

    def locked(self, folder: str, name: str) -> AbstractAsyncContextManager[None]:
        """The record to this process while held, among the processes that would otherwise conflict on it (a
        save that conflicts anyway is the caller's to re-apply)."""
        ...


class Spills(Protocol):
    """A Think run's spilled captures (gzip JSON) by `(folder, run_id, name)`, readable by every replica (`folder`:
    the run's, as for its record)."""

    def location(self, folder: str, run_id: str, name: str) -> str:
        """Where the value is kept, as shown to the model (a file path, or the Redis hash and field)."""
        ...

    async def put(self, folder: str, run_id: str, name: str, data: bytes) -> None: ...

    async def get(self, folder: str, run_id: str, name: str) -> bytes | None: ...

    async def drop(self, folder: str, run_id: str) -> None:
        """Forget every spilled value of the run (it was cleared)."""
        ...


SESSION_IDLE_S = 3600.0
"""A session nobody used for this long is forgotten (in memory, and its shared fields in Redis)."""


class SessionShare(Protocol):
    """The fields of a session every replica must see alike: a 2026-era session has no id to pin it to a
    replica, so any replica may serve its next request. Sessions are named by their key (identity and connection)."""

    async def claim_first(self, session: str) -> bool:
        """Whether this is the session's first tool result (the driver prompt rides on it), once across replicas."""
        ...

    async def runs(self, session: str, owner: str, *, refresh: bool = True) -> dict[str, tuple[str, int]]:
        """The Think runs the session drives, in one round trip: workflow -> (run id, the run's stored version;
        `owner`: the session's, whose runs they are).
        `refresh`: restart the session's idle expiry too (a write: with `appendfsync always`, an fsync)."""
        ...

    async def track(self, session: str, workflow: str, run_id: str | None) -> None:
        """Note the run the session drives for `workflow`, or (None) that it drives none any more."""
        ...

    async def promoted(self, session: str) -> list[str]:
        """The tools found in the session (exposure promotions), least recently used first."""
        ...

    async def promote(self, session: str, names: list[str]) -> None:
        """Store the session's promoted tools (the whole list: the last replica to promote wins a race)."""
        ...


USAGE_KEPT = 200
"""Tools counted per identity: past it the least used are forgotten (the `auto` fill needs at most `max_tools`)."""
USAGE_IDLE_S = 30 * 86_400.0
"""An identity that called nothing for this long is forgotten (Redis: the key's expiry)."""


def most_used(counts: Iterable[tuple[str, float]]) -> list[tuple[str, float]]:
    """(tool, calls) most called first; equal counts by name, so every replica and every backend orders them alike."""
    return sorted(counts, key=lambda item: (-item[1], item[0]))


class Usage(Protocol):
    """How often each identity called each tool, for `auto`'s fill order (DESIGN §14): kept per owner
    (`Identity.owner`), at most USAGE_KEPT tools each, shared by replicas on Redis."""

    where: str

    async def add(self, owner: str, counts: Mapping[str, int]) -> None:
        """Add calls per canonical tool name to the owner's counts."""
        ...

    async def top(self, owner: str, limit: int) -> list[str]:
        """The owner's most called tools, most first (ties: the name), at most `limit`."""
        ...


class ClientShare(Protocol):
    """What the gateway remembers about one client across its sessions and connections (DESIGN §14, §16): a client
    is its identity and its `clientInfo.name`, named here by a digest of both (`gateway.session.Session.client_key`),
    so another identity or another client name is another key and finds nothing. Kept for `window_s`."""

    window_s: float

    async def claim_first(self, client: str) -> bool:
        """Whether this is the client's first tool result of the window (the driver prompt rides on it): a
        set-if-absent, so of two sessions asking at once exactly one is first, on every replica. The claim lasts
        `window_s` from now, whatever the client does meanwhile (a new conversation gets the driver again after)."""
        ...

    async def promoted(self, client: str) -> list[str]:
        """The tools the client found (exposure promotions), least recently used first; restarts their expiry."""
        ...

    async def promote(self, client: str, names: list[str]) -> None:
        """Store the client's promoted tools (the whole list: of two sessions promoting at once the last one wins)."""
        ...


class Outputs(Protocol):
    """Spilled results, paged by id (`gateway.store.outputs` defines ids, pages and errors); each is its
    `owner`'s: stored under `owned(owner, id)`, so the same id read by another owner is an unknown one."""

    ttl_s: float

    async def spill(self, owner: str, result: dict[str, Any], text: str) -> "Spilled": ...

    async def read(self, owner: str, output_id: str, offset: int = 0, length: int = ...) -> "Page": ...

    async def read_whole(self, owner: str, output_id: str) -> dict[str, Any]: ...


class CallLog(Protocol):
    """Recent tool calls as the page shows them (plain JSON-able dicts, made off the call's path) and each
    replica's operation counts; on Redis every replica's, read from any replica. A call is its caller's: kept
    under `owned(owner, …)`, read by owner (`owners` None: every owner's, for an admin). Bounded by size."""

    where: str

    async def add(self, calls: Sequence[tuple[str, dict[str, Any]]]) -> None:
        """Keep `(owner, call)` pairs, oldest first; the oldest beyond the bounds go."""

    async def recent(self, owners: frozenset[str] | None) -> list[dict[str, Any]]:
        """The kept calls of `owners` (None: all), newest first."""

    async def put_counts(self, replica: str, counts: dict[str, Any]) -> None:
        """This replica's counts now (replacing its last); a replica that stops putting is forgotten."""

    async def counts(self) -> dict[str, dict[str, Any]]:
        """Each live replica's latest counts."""

    async def keep_arguments(self, owner: str, on: bool) -> None:
        """Keep `owner`'s calls with their arguments from now on, or not (their choice; off by default)."""

    async def arguments_kept(self) -> frozenset[str]:
        """The owners whose calls are kept with their arguments (what every replica's recorder follows)."""


class SharedLoads(Protocol):
    """Loads shared by replicas: the value under `key` if one was stored within `ttl_s`, else `loader()` once."""

    async def load(self, key: str, loader: Callable[[], Awaitable[Any]], ttl_s: float) -> Any: ...
