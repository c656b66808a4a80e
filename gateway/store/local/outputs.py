"""Spill store for oversized results: gzip files with validated ids, a TTL, and paged reads of their text."""

import gzip
import json
import logging
import os
import secrets
import tempfile
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio

from gateway.results import utf8_len, utf8_slices
from gateway.store.base import owned
from gateway.store.outputs import (
    ENCODER,
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

logger = logging.getLogger(__name__)


def _open(path: Path) -> gzip.GzipFile:
    if path.stat().st_size == 0:  # gzip reads an empty file as an empty text, but a spill always writes a header
        raise EOFError("the file is empty")
    return gzip.GzipFile(path, "rb")


class OutputStore:
    """`<dir>/<name>.json.gz` holds the whole result as JSON, `<name>.txt.gz` its text view for paging (byte offsets);
    `name` is `owned(owner, id)`: the id read by another owner names no file."""

    def __init__(self, directory: Path, *, ttl_s: float = 7200.0, clock: Callable[[], float] = time.time) -> None:
        self.directory = directory
        self.ttl_s = ttl_s
        self._clock = clock

    def spill(self, owner: str, result: dict[str, Any], text: str) -> Spilled:
        """Write both files atomically (temp file + rename), as the owner's.

        Raises:
            OSError: the directory is not writable or the disk is full; nothing partial is left behind.
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        self.cleanup()
        output_id = secrets.token_hex(12)
        name = owned(owner, output_id)
        stored = self._write(f"{name}.txt.gz", utf8_slices(text))
        try:
            # ASCII JSON, written piece by piece: at most one escaped copy of the largest string at a time.
            pieces = (p for chunk in ENCODER.iterencode(result) for p in utf8_slices(chunk))
            stored += self._write(f"{name}.json.gz", pieces)
        except OSError:
            (self.directory / f"{name}.txt.gz").unlink(missing_ok=True)
            raise
        return Spilled(output_id, utf8_len(text), stored)

    def _write(self, name: str, pieces: Iterable[bytes]) -> int:
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1) as gz:
                for piece in pieces:
                    gz.write(piece)
            os.replace(tmp, self.directory / name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return (self.directory / name).stat().st_size

    def _path(self, owner: str, output_id: str, suffix: str) -> Path:
        check_id(output_id)
        name = owned(owner, output_id)
        path = self.directory / f"{name}{suffix}"
        try:
            age = self._clock() - path.stat().st_mtime
        except FileNotFoundError:
            raise missing(output_id) from None
        if age > self.ttl_s:
            self._remove(name)
            raise OutputError(
                f"Stored output {output_id!r} expired ({age / 3600:.1f} h old, kept {self.ttl_s / 3600:g} h); "
                "call the original tool again."
            )
        return path

    def read(self, owner: str, output_id: str, offset: int = 0, length: int = MAX_PAGE_BYTES) -> Page:
        """A page of at most `length` bytes of the owner's output's text view (see `cut_page`).

        Raises:
            OutputError: bad id, unknown (or another owner's), expired, unreadable or corrupt output, negative or
                past-the-end offset, bad length.
        """
        path = self._path(owner, output_id, ".txt.gz")
        check_range(offset, length)
        with self._reading(output_id, path), _open(path) as gz:
            total = gz.seek(0, os.SEEK_END)
            check_offset(output_id, offset, total)
            gz.seek(offset)
            chunk = gz.read(length + 6)  # room to skip into, and to finish, a character cut by the range
            return cut_page(output_id, offset, length, total, chunk)

    def read_whole(self, owner: str, output_id: str) -> dict[str, Any]:
        path = self._path(owner, output_id, ".json.gz")
        with self._reading(output_id, path), _open(path) as gz:
            whole = json.loads(gz.read())
            if not isinstance(whole, dict):
                raise ValueError(f"it holds a JSON {type(whole).__name__}, not a result")
            return whole

    @contextmanager
    def _reading(self, output_id: str, path: Path) -> Iterator[None]:
        """A file that is not what `spill` wrote (truncated, not gzip, not UTF-8 or JSON) is corrupt: logged with
        its path, removed with its sibling (so logged once) and answered as missing; other I/O errors say why."""
        try:
            yield
        except (EOFError, zlib.error, gzip.BadGzipFile, ValueError) as exc:
            logger.warning(
                "outputs: %s is corrupt (%s: %s); removed, answered as missing", path, type(exc).__name__, exc
            )
            self._remove(path.name.partition(".")[0])  # the output's owned name
            raise missing(output_id) from None
        except FileNotFoundError:  # expired and cleaned up between the look-up and the read
            raise missing(output_id) from None
        except OSError as exc:
            raise OutputError(
                f"Stored output {output_id!r} could not be read ({exc.strerror or exc}); call the original tool again."
            ) from None

    def _remove(self, name: str) -> None:
        for suffix in (".txt.gz", ".json.gz"):
            (self.directory / f"{name}{suffix}").unlink(missing_ok=True)

    def cleanup(self) -> int:
        """Delete expired outputs (and stray temp files); returns how many files went."""
        removed = 0
        now = self._clock()
        try:
            entries = list(os.scandir(self.directory))
        except FileNotFoundError:
            return 0
        for entry in entries:
            try:
                if now - entry.stat().st_mtime > self.ttl_s:
                    os.unlink(entry.path)
                    removed += 1
            except FileNotFoundError:
                continue
        if removed:
            logger.info("outputs: removed %d expired files from %s", removed, self.directory)
        return removed


class LocalOutputs:
    """`OutputStore`'s files behind the async `Outputs` interface: gzip work and file reads in a worker thread."""

    def __init__(self, files: OutputStore) -> None:
        self.files = files
        self.ttl_s = files.ttl_s

    async def spill(self, owner: str, result: dict[str, Any], text: str) -> Spilled:
        return await anyio.to_thread.run_sync(self.files.spill, owner, result, text)

    async def read(self, owner: str, output_id: str, offset: int = 0, length: int = MAX_PAGE_BYTES) -> Page:
        return await anyio.to_thread.run_sync(self.files.read, owner, output_id, offset, length)

    async def read_whole(self, owner: str, output_id: str) -> dict[str, Any]:
        return await anyio.to_thread.run_sync(self.files.read_whole, owner, output_id)
