"""The issuer's signing keys (JWKS): fetched over HTTP, cached, refreshed when a token names an unknown `kid`.

A refresh is single-flight (concurrent requests with a new `kid` share one fetch) and rate-limited
(`min_refresh_s`), so a stream of tokens with made-up key ids cannot turn the gateway into a JWKS
hammer. Keys are also refetched once `ttl_s` has passed, so a rotated-out key stops being accepted.
"""

import logging
import time
from collections.abc import Callable

import anyio
import httpx2
import jwt

logger = logging.getLogger(__name__)


class KeysUnavailable(Exception):
    """The JWKS could not be fetched or read; the message names the URL and the reason."""


class KeySet:
    def __init__(
        self,
        url: str,
        *,
        ttl_s: float = 3600.0,
        min_refresh_s: float = 30.0,
        timeout_s: float = 5.0,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = url
        self._ttl_s = ttl_s
        self._min_refresh_s = min_refresh_s
        self._timeout_s = timeout_s
        self._timer = timer
        self._keys: dict[str, jwt.PyJWK] = {}
        self._fetched_at = float("-inf")
        self._lock = anyio.Lock()
        self.fetches = 0

    async def key(self, kid: str | None) -> jwt.PyJWK | None:
        """The signing key for `kid` (None: the set's only key), fetching the set when needed; None if unknown."""
        if self._timer() - self._fetched_at > self._ttl_s:
            try:
                await self._refresh(force=True)
            except KeysUnavailable as exc:
                if not self._keys:
                    raise
                logger.warning("%s; using the keys fetched before", exc)  # stale beats locking everyone out
        found = self._pick(kid)
        if found is None and self._timer() - self._fetched_at >= self._min_refresh_s:
            await self._refresh(force=False)
            found = self._pick(kid)
        return found

    def _pick(self, kid: str | None) -> jwt.PyJWK | None:
        if kid is None:
            return next(iter(self._keys.values())) if len(self._keys) == 1 else None
        return self._keys.get(kid)

    async def _refresh(self, *, force: bool) -> None:
        fetched_at = self._fetched_at
        async with self._lock:
            if self._fetched_at != fetched_at:
                return  # another task refreshed while this one waited
            if not force and self._timer() - self._fetched_at < self._min_refresh_s:
                return
            try:
                self._keys = await self._fetch()
            finally:
                # A failed fetch also counts: the next try waits `min_refresh_s` instead of hammering the issuer.
                self._fetched_at = self._timer()

    async def _fetch(self) -> dict[str, jwt.PyJWK]:
        self.fetches += 1
        try:
            with anyio.fail_after(self._timeout_s):
                async with httpx2.AsyncClient(timeout=self._timeout_s) as http:
                    response = await http.get(self.url)
                    response.raise_for_status()
                    data = response.json()
        except TimeoutError:
            raise KeysUnavailable(f"JWKS {self.url}: no answer within {self._timeout_s:g} s") from None
        except (httpx2.HTTPError, ValueError) as exc:
            raise KeysUnavailable(f"JWKS {self.url}: {type(exc).__name__}: {exc}") from exc
        keys: dict[str, jwt.PyJWK] = {}
        for entry in data.get("keys", []) if isinstance(data, dict) else []:
            if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                continue
            try:
                key = jwt.PyJWK(entry)
            except jwt.PyJWTError as exc:  # one unusable key (unknown kty/alg) must not hide the others
                logger.info("JWKS %s: skipped key %r: %s", self.url, entry.get("kid"), exc)
                continue
            keys[str(entry.get("kid", ""))] = key
        if not keys:
            raise KeysUnavailable(f"JWKS {self.url}: no usable signing keys in the answer")
        logger.info("JWKS %s: %d signing keys", self.url, len(keys))
        return keys
