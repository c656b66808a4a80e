"""The issuer's signing keys (JWKS): fetched over HTTP, cached, refreshed when a token names an unknown `kid`.

A refresh is single-flight: requests that need one while a fetch is under way wait for it and share its
outcome, keys or failure. It is rate-limited (`min_refresh_s` between two attempts, failed ones
included), so a stream of tokens with made-up key ids, or an issuer that is down, cannot turn the
gateway into a JWKS hammer. Keys are also refetched once `ttl_s` has passed, so a rotated-out key
stops being accepted; while a refetch fails, the keys fetched before stay in use.

A token whose key could not be had because the JWKS could not be fetched is not refused as invalid
(401 tells a client to throw its token away): `KeysUnavailable` (503) says "retry", until a fetch
succeeds. The answer is read up to `max_bytes`, never whole first.
"""

import json
import logging
import time
from collections.abc import Callable

import anyio
import httpx2
import jwt

logger = logging.getLogger(__name__)


class KeysUnavailable(Exception):
    """The JWKS could not be fetched or read; the message (one line) names the URL and the reason."""

    def __init__(self, message: str, *, retry_in_s: float = 0.0) -> None:
        super().__init__(message)
        self.retry_in_s = retry_in_s
        """When the next fetch may be tried (the refresh rate limit)."""


class KeySet:
    def __init__(
        self,
        url: str,
        *,
        ttl_s: float = 3600.0,
        min_refresh_s: float = 30.0,
        timeout_s: float = 5.0,
        max_bytes: int = 1024 * 1024,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = url
        self._ttl_s = ttl_s
        self._min_refresh_s = min_refresh_s
        self._timeout_s = timeout_s
        self._max_bytes = max_bytes
        self._timer = timer
        self._keys: dict[str, jwt.PyJWK] = {}
        self._fetched_at = float("-inf")
        """When the last fetch attempt ended, successful or not."""
        self._failure: str | None = None
        """Why the last attempt failed; None once one succeeded."""
        self._attempts = 0
        self._lock = anyio.Lock()
        self.fetches = 0

    async def key(self, kid: str | None) -> jwt.PyJWK | None:
        """The signing key for `kid` (None: the set's only key), fetching the set when needed; None if unknown.

        Raises:
            KeysUnavailable: the key is not among those at hand and the last fetch failed.
        """
        age = self._timer() - self._fetched_at
        if age > self._ttl_s or (self._failure is not None and age >= self._min_refresh_s):
            await self._refresh()
        found = self._pick(kid)
        if found is None and self._failure is None and self._timer() - self._fetched_at >= self._min_refresh_s:
            await self._refresh()  # a key id not seen yet: maybe the issuer rotated one in
            found = self._pick(kid)
        if found is None and self._failure is not None:
            wait = max(0.0, self._fetched_at + self._min_refresh_s - self._timer())
            raise KeysUnavailable(self._failure, retry_in_s=wait)
        return found

    def _pick(self, kid: str | None) -> jwt.PyJWK | None:
        if kid is None:
            return next(iter(self._keys.values())) if len(self._keys) == 1 else None
        return self._keys.get(kid)

    async def _refresh(self) -> None:
        attempts = self._attempts
        async with self._lock:
            if self._attempts != attempts:
                return  # a fetch ended while this task waited: its outcome, keys or failure, is this task's too
            # A cancelled fetch (its requester left) records nothing: the next waiter fetches instead.
            try:
                self._keys = await self._fetch()
                self._failure = None
            except KeysUnavailable as exc:
                self._failure = str(exc)
                logger.warning("%s%s", exc, "; using the keys fetched before" if self._keys else "")
            self._attempts += 1
            self._fetched_at = self._timer()

    async def _fetch(self) -> dict[str, jwt.PyJWK]:
        self.fetches += 1
        try:
            with anyio.fail_after(self._timeout_s):
                async with httpx2.AsyncClient(timeout=None) as http:  # the whole fetch is bounded above
                    data = await self._read(http)
        except TimeoutError:
            raise KeysUnavailable(f"JWKS {self.url}: no answer within {self._timeout_s:g} s") from None
        except httpx2.HTTPError as exc:
            raise KeysUnavailable(f"JWKS {self.url}: {type(exc).__name__}: {_line(str(exc))}") from exc
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

    async def _read(self, http: httpx2.AsyncClient) -> object:
        """The answer's JSON, read no further than `max_bytes` (a declared length over it is refused unread)."""
        async with http.stream("GET", self.url) as response:
            status = response.status_code
            if status != 200:
                hint = "; check auth.jwt.jwks_url" if 400 <= status < 500 else ""
                raise KeysUnavailable(f"JWKS {self.url} answered HTTP {status}{hint}")
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > self._max_bytes:
                raise self._too_big(f"is {int(declared):,} bytes")
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > self._max_bytes:
                    raise self._too_big(f"passed {len(body):,} bytes")  # read no further
        try:
            return json.loads(body)
        except (ValueError, RecursionError) as exc:
            raise KeysUnavailable(f"JWKS {self.url}: the answer is not JSON ({_line(str(exc))})") from None

    def _too_big(self, what: str) -> KeysUnavailable:
        return KeysUnavailable(
            f"JWKS {self.url}: the answer {what}, over the limit of {self._max_bytes:,} (auth.jwt.jwks_max_bytes); "
            "check that jwks_url is the issuer's jwks_uri, or raise the limit"
        )


def _line(text: str) -> str:
    """`text` on one line: httpx's messages span two, and this one ends up in a response header."""
    return " ".join(text.split())
