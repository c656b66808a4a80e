"""Spilled outputs in Redis, so any replica pages any output: the text view in gzip chunks, the whole result as one
gzip blob, all under Redis's own TTL; a size cap evicts the oldest outputs first.

Keys: `{prefix}out:{name}` (hash: text_bytes, chunks, stored), `{prefix}out:{name}:t:{n}` (text chunk n),
`{prefix}out:{name}:j` (the result's JSON); `{prefix}outs` orders names by age, `{prefix}outs:size` holds their
sizes. An output's `name` is `owned(owner, id)`: the id read by another owner names no key.

A corrupt entry (edited by hand, another program's key) is logged with its key, deleted and answered as missing.
"""

import gzip
import io
import json
import logging
import re
import secrets
import time
import zlib
from collections.abc import Awaitable
from typing import Any, cast

import anyio
from redis import exceptions

from gateway.results import utf8_len, utf8_slices
from gateway.store.base import _OWNER, OWNED, owned
from gateway.store.outputs import (
    ENCODER,
    ID,
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

logger = logging.getLogger(__name__)

CHUNK = 256 * 1024
"""Text bytes per chunk: a page (≤ 20 KB) reads at most two chunks, whatever the output's size."""
_FIELDS = ["text_bytes", "chunks", "stored"]
_NAME = re.compile(f"{_OWNER.pattern}{OWNED}{ID.pattern}")  # what a spill puts in the index: owned(owner, id)
# An output's hash, JSON and chunks up to the first missing one, whatever its hash says (one Redis, as sessions').
_DROP = """redis.call('DEL', KEYS[1], KEYS[1] .. ':j')
local n = 0 while redis.call('DEL', KEYS[1] .. ':t:' .. n) == 1 do n = n + 1 end return n"""


class Corrupt(Exception):
    """A stored entry that is not what a spill wrote: it is deleted and answered as missing."""


def wrong_type(exc: Exception) -> bool:
    """Redis's answer to a command on a key that holds another type than the command's."""
    return isinstance(exc, exceptions.ResponseError) and str(exc).startswith("WRONGTYPE")


def parse_meta(raw: object) -> tuple[int, int, int] | None:
    """An output's text_bytes, chunks and stored (None: no such output). Raises Corrupt when not a spill's."""
    if isinstance(raw, Exception):  # a pipeline's answer for this key
        raise Corrupt(str(raw)) if wrong_type(raw) else raw
    fields = cast(list[bytes | None], raw)
    if all(v is None for v in fields):
        return None
    try:
        text_bytes, chunks, stored = (int(cast(bytes, v)) for v in fields)
    except (TypeError, ValueError):
        raise Corrupt(", ".join(f"{k}={v!r:.40}" for k, v in zip(_FIELDS, fields, strict=True))) from None
    if min(text_bytes, stored) < 0 or chunks != max(1, -(-text_bytes // CHUNK)):
        raise Corrupt(f"{chunks} chunks for {text_bytes} bytes, {stored} stored")
    return text_bytes, chunks, stored


def inflate(blob: bytes, size: int) -> bytes:
    """A chunk's text bytes, which must be `size` (a chunk holding more is never inflated past that)."""
    try:
        inflater = zlib.decompressobj(wbits=31)  # gzip
        data = inflater.decompress(blob, size + 1)
    except zlib.error as exc:
        raise Corrupt(f"a chunk is not gzip ({exc})") from None
    if len(data) != size or not inflater.eof or inflater.unused_data:
        raise Corrupt(f"a chunk holds {'more than ' if len(data) > size else ''}{len(data)} bytes, not {size}")
    return data


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
        for part in ENCODER.iterencode(result):
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
        self._drop = client.register_script(_DROP)

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
        """Forget expired and corrupt outputs, then delete the oldest live ones while the total is over the cap."""
        index, sizes = f"{self._prefix}outs", f"{self._prefix}outs:size"
        members = cast(list[bytes], await self._redis.zrange(index, 0, -1))
        strays = [m for m in members if not _NAME.fullmatch(m.decode("latin-1"))]
        names = [m.decode() for m in members if m not in strays]
        if strays:
            logger.warning("outputs: %d entries of %s are not outputs (%r…); removed", len(strays), index, strays[0])
            await self._redis.zrem(index, *strays)
        async with self._redis.pipeline(transaction=False) as pipe:
            for name in names:
                pipe.hmget(self._key(name), _FIELDS)
            answers = await pipe.execute(raise_on_error=False)
        live: dict[str, int] = {}
        gone: list[str] = []
        for name, raw in zip(names, answers, strict=True):
            try:
                meta = parse_meta(raw)
            except Corrupt as exc:
                await self._forget_corrupt(name, exc)
                continue
            if meta is None:
                gone.append(name)  # expired
            else:
                live[name] = meta[2]
        total = sum(live.values())
        for name, stored in live.items():  # oldest first
            if total <= self.max_bytes:
                break
            if name != keep:
                await self._drop(keys=[self._key(name)])
                total -= stored
                gone.append(name)
        if gone:
            await self._redis.zrem(index, *gone)
            await self._redis.hdel(sizes, *gone)

    async def _forget_corrupt(self, name: str, exc: Corrupt) -> None:
        logger.warning("outputs: %s is corrupt (%s); deleted, answered as missing", self._key(name), exc)
        await self._drop(keys=[self._key(name)])
        await self._redis.zrem(f"{self._prefix}outs", name)
        await self._redis.hdel(f"{self._prefix}outs:size", name)

    async def read(self, owner: str, output_id: str, offset: int = 0, length: int = MAX_PAGE_BYTES) -> Page:
        """A page of the owner's output's text view (as `OutputStore.read`), from the one or two chunks that hold it."""
        check_id(output_id)
        check_range(offset, length)
        name = owned(owner, output_id)
        async with guarded(self.where):
            try:
                return await self._page(name, output_id, offset, length)
            except Corrupt as exc:
                await self._forget_corrupt(name, exc)
                raise self._gone(output_id) from None

    async def _answer(self, command: Awaitable[Any]) -> Any:
        """The answer of a read; a key of another type than the command's is corrupt."""
        try:
            return await command
        except exceptions.ResponseError as exc:
            raise (Corrupt(str(exc)) if wrong_type(exc) else exc) from None

    async def _page(self, name: str, output_id: str, offset: int, length: int) -> Page:
        meta = parse_meta(await self._answer(self._redis.hmget(self._key(name), _FIELDS)))
        if meta is None:
            raise self._gone(output_id)
        total, count, _ = meta
        check_offset(output_id, offset, total)
        first, last = offset // CHUNK, min((offset + length + 6) // CHUNK, count - 1)
        keys = [self._key(name, f":t:{n}") for n in range(first, last + 1)]
        blobs = cast(list[bytes | None], await self._redis.mget(keys))
        if any(b is None for b in blobs):  # expired between the two reads
            raise self._gone(output_id)
        sizes = [min(CHUNK, total - n * CHUNK) for n in range(first, last + 1)]
        data = b"".join(inflate(cast(bytes, b), size) for b, size in zip(blobs, sizes, strict=True))
        start = offset - first * CHUNK
        try:
            return cut_page(output_id, offset, length, total, data[start : start + length + 6])
        except UnicodeDecodeError as exc:
            raise Corrupt(f"its text is not UTF-8 ({exc})") from None

    async def read_whole(self, owner: str, output_id: str) -> dict[str, Any]:
        check_id(output_id)
        name = owned(owner, output_id)
        async with guarded(self.where):
            try:
                blob = cast(bytes | None, await self._answer(self._redis.get(self._key(name, ":j"))))
                if blob is None:
                    raise self._gone(output_id)
                whole = json.loads(gzip.decompress(blob))
                if not isinstance(whole, dict):
                    raise ValueError(f"it holds a JSON {type(whole).__name__}, not a result")
            except (EOFError, zlib.error, gzip.BadGzipFile, ValueError, Corrupt) as exc:
                await self._forget_corrupt(name, Corrupt(f"its JSON: {type(exc).__name__}: {exc}"))
                raise self._gone(output_id) from None
        return whole

    def _gone(self, output_id: str) -> OutputError:
        kept = f" (outputs are kept {self.ttl_s / 3600:g} h; the oldest go first past {self.max_bytes:,} bytes in all)"
        return missing(output_id, kept)
