"""The one Redis connection of a gateway process (redis-py's asyncio client) and its error boundary.

Every Redis call of the store goes through `guarded()`, so an unreachable, restarting or read-only Redis
reaches callers as one `StoreUnavailable` that names the server and the cause, never as a raw client error.
"""

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import redis.asyncio as aioredis
from redis import exceptions
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff

from gateway.store.base import StoreUnavailable

Redis = aioredis.Redis


def connect(url: str) -> "aioredis.Redis":
    """A lazily connecting client: a few quick retries ride out a blip or a restart, then callers get an error."""
    return aioredis.Redis.from_url(
        url,
        socket_connect_timeout=2,
        socket_timeout=5,
        retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), retries=3),
        retry_on_error=[exceptions.ConnectionError, exceptions.TimeoutError],
        health_check_interval=30,
    )


def where(url: str, prefix: str) -> str:
    """`redis://host:port/db prefix` without credentials, for messages and logs."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    port = f":{parts.port}" if parts.port else ""
    return f"redis at {parts.scheme}://{host}{port}{parts.path or ''} (prefix {prefix!r})"


def _detail(exc: exceptions.RedisError) -> str:
    if isinstance(exc, exceptions.BusyLoadingError):
        return "Redis is loading its data set after a restart"
    if isinstance(exc, exceptions.ReadOnlyError):
        return "Redis is a read-only replica"
    if isinstance(exc, (exceptions.ConnectionError, exceptions.TimeoutError)):
        return f"cannot reach it ({type(exc).__name__}: {exc})"
    return f"it refused the operation ({type(exc).__name__}: {exc})"


@asynccontextmanager
async def guarded(place: str) -> AsyncIterator[None]:
    """Map the client's errors to `StoreUnavailable(place, …)`."""
    try:
        yield
    except exceptions.RedisError as exc:
        raise StoreUnavailable(place, _detail(exc)) from exc


PAUSE_S = 5.0


class Breaker:
    """`guarded` for reads and writes that ride on ordinary tool calls (session and client state): a Redis that
    failed is not asked again for PAUSE_S, so meanwhile those calls fail at once (their callers fall back to this
    replica's memory) instead of each waiting out the retries."""

    def __init__(self, where: str) -> None:
        self.where = where
        self._paused_until = 0.0

    @asynccontextmanager
    async def guarded(self) -> AsyncIterator[None]:
        if time.monotonic() < self._paused_until:
            raise StoreUnavailable(self.where, f"it failed less than {PAUSE_S:g} s ago (asked again after that)")
        try:
            async with guarded(self.where):
                yield
        except StoreUnavailable:
            self._paused_until = time.monotonic() + PAUSE_S
            raise
