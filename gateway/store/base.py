"""What every store backend shares: the errors it raises and the run-record interface (DESIGN §17).

Backends store bytes under `(folder, name)` keys with a version counter; the typed layer above them
(`gateway.think.state.StateStore`) owns the models and the messages the model reads.
"""

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from gateway.errors import GatewayError

if TYPE_CHECKING:
    from gateway.store.outputs import Page, Spilled


class StoreUnavailable(GatewayError):
    """The store cannot be reached or refused the operation; nothing was changed by the failed call."""

    def __init__(self, where: str, detail: str) -> None:
        self.where = where
        super().__init__(
            f"The gateway's store ({where}) is unavailable: {detail}. Nothing was changed. Retry in a few "
            "seconds; if it persists, check that the store is running and `store.url` in the config points at it."
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


class Outputs(Protocol):
    """Spilled results, paged by id (`gateway.store.outputs` defines ids, pages and errors)."""

    ttl_s: float

    async def spill(self, result: dict[str, Any], text: str) -> "Spilled": ...

    async def read(self, output_id: str, offset: int = 0, length: int = ...) -> "Page": ...

    async def read_whole(self, output_id: str) -> dict[str, Any]: ...


class SharedLoads(Protocol):
    """Loads shared by replicas: the value under `key` if one was stored within `ttl_s`, else `loader()` once."""

    async def load(self, key: str, loader: Callable[[], Awaitable[Any]], ttl_s: float) -> Any: ...
