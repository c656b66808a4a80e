"""Spilled outputs in Redis, so any replica pages any output: the text view in gzip chunks, the whole result as one
gzip blob, all under Redis's own TTL; a size cap evicts the oldest outputs first.

Keys: `{prefix}out:{name}` (hash: text_bytes, chunks, stored), `{prefix}out:{name}:t:{n}` (text chunk n),
`{prefix}out:{name}:j` (the result's JSON); `{prefix}outs` orders names by age, `{prefix}outs:size` holds their
sizes. An output's `name` is `owned(owner, id)`: the id read by another owner names no key.
"""

import gzip
import io
import json
import secrets
import time
from typing import Any, cast

import anyio

from gateway.results import utf8_len, utf8_slices
from gateway.store.base import owned
from gateway.store.local.outputs import (
    _ENCODER,
    MAX_PAGE_BYTES,
    OutputError,
    Page,
    Spilled,
    check_id,
    check_offset,
    check_range,
    cut_page,
    missing,
)
from gateway.store.redis.client import Redis, guarded

CHUNK = 256 * 1024
"""Text bytes per chunk: a page (≤ 20 KB) reads at most two chunks, whatever the output's size."""


def _compress(result: dict[str, Any], text: str) -> tuple[list[bytes], bytes]:
    """The text view as gzip chunks of CHUNK bytes each, and the result's JSON gzipped (CPU work: run in a thread)."""
    chunks: list[bytes] = []
    pending = bytearray()
    for piece in utf8_slices(text):
        pending += piece
        while len(pending) >= CHUNK:
            chunks.append(gzip.compress(bytes(pending[:CHUNK]), compresslevel=1))
            del pending[:CHUNK]
    if pending or not chunks:
        chunks.append(gzip.compress(bytes(pending), compresslevel=1))
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=1) as gz:
        for part in _ENCODER.iterencode(result):
            gz.write(part.encode())
    return chunks, buffer.getvalue()


class RedisOutputs:
    def __init__(self, client: Redis, prefix: str, where: str, *, ttl_s: float, max_bytes: int) -> None:
        self._redis = client
        self._prefix = prefix
        self.where = where
        self.ttl_s = ttl_s
        self.max_bytes = max_bytes
        """Compressed bytes all outputs may take together; beyond it the oldest go first."""

    def _key(self, name: str, part: str = "") -> str:
        return f"{self._prefix}out:{name}{part}"

    async def spill(self, owner: str, result: dict[str, Any], text: str) -> Spilled:
        """Store one output of the owner's atomically (MULTI/EXEC): all its keys or none.

        Raises:
            StoreUnavailable: Redis cannot be reached or refused the write (e.g. out of memory).
        """
        output_id = secrets.token_hex(12)
        name = owned(owner, output_id)
        chunks, whole = await anyio.to_thread.run_sync(_compress, result, text)
        stored = sum(map(len, chunks)) + len(whole)
        ttl_ms = max(1, int(self.ttl_s * 1000))
        async with guarded(self.where):
            async with self._redis.pipeline(transaction=True) as pipe:
                for n, chunk in enumerate(chunks):
                    pipe.set(self._key(name, f":t:{n}"), chunk, px=ttl_ms)
                pipe.set(self._key(name, ":j"), whole, px=ttl_ms)
                text_bytes = utf8_len(text)
                meta: dict[str | bytes, int] = {"text_bytes": text_bytes, "chunks": len(chunks), "stored": stored}
                pipe.hset(self._key(name), mapping=cast(Any, meta))
                pipe.pexpire(self._key(name), ttl_ms)
                pipe.zadd(f"{self._prefix}outs", {name: time.time()})
                pipe.hset(f"{self._prefix}outs:size", name, stored)
                await pipe.execute()
            await self._evict(keep=name)
        return Spilled(output_id, text_bytes, stored)

    async def _evict(self, keep: str) -> None:
        """Forget expired outputs from the index; delete the oldest live ones while the total is over the cap."""
        index, sizes = f"{self._prefix}outs", f"{self._prefix}outs:size"
        ids = [i.decode() for i in cast(list[bytes], await self._redis.zrange(index, 0, -1))]
        if not ids:
            return
        async with self._redis.pipeline(transaction=False) as pipe:
            for output_id in ids:
                pipe.hmget(self._key(output_id), ["chunks", "stored"])
            metas = await pipe.execute()
        live = {i: (int(m[0]), int(m[1])) for i, m in zip(ids, metas, strict=True) if m[0] is not None}
        total = sum(stored for _, stored in live.values())
        gone = [i for i in ids if i not in live]
        for output_id in ids:
            if total <= self.max_bytes:
                break
            if output_id in live and output_id != keep:
                chunks, stored = live[output_id]
                keys = [self._key(output_id, f":t:{n}") for n in range(chunks)]
                await self._redis.delete(self._key(output_id), self._key(output_id, ":j"), *keys)
                total -= stored
                gone.append(output_id)
        if gone:
            await self._redis.zrem(index, *gone)
            await self._redis.hdel(sizes, *gone)

    async def read(self, owner: str, output_id: str, offset: int = 0, length: int = MAX_PAGE_BYTES) -> Page:
        """A page of the owner's output's text view (as `OutputStore.read`), from the one or two chunks that hold it."""
        check_id(output_id)
        check_range(offset, length)
        name = owned(owner, output_id)
        async with guarded(self.where):
            text_bytes, count = cast(
                list[bytes | None], await self._redis.hmget(self._key(name), ["text_bytes", "chunks"])
            )
            if text_bytes is None:
                raise self._gone(output_id)
            total = int(text_bytes)
            check_offset(output_id, offset, total)
            first, last = offset // CHUNK, min((offset + length + 6) // CHUNK, int(count or 1) - 1)
            keys = [self._key(name, f":t:{n}") for n in range(first, last + 1)]
            blobs = cast(list[bytes | None], await self._redis.mget(keys))
        found = [b for b in blobs if b is not None]
        if len(found) < len(blobs):  # expired between the two reads
            raise self._gone(output_id)
        data = b"".join(gzip.decompress(b) for b in found)
        start = offset - first * CHUNK
        return cut_page(output_id, offset, length, total, data[start : start + length + 6])

    async def read_whole(self, owner: str, output_id: str) -> dict[str, Any]:
        check_id(output_id)
        async with guarded(self.where):
            blob = cast(bytes | None, await self._redis.get(self._key(owned(owner, output_id), ":j")))
        if blob is None:
            raise self._gone(output_id)
        whole: dict[str, Any] = json.loads(gzip.decompress(blob))
        return whole

    def _gone(self, output_id: str) -> OutputError:
        kept = f" (outputs are kept {self.ttl_s / 3600:g} h; the oldest go first past {self.max_bytes:,} bytes in all)"
        return missing(output_id, kept)
