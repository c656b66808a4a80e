"""People's sealed OAuth tokens (`gateway.store.tokens.Tokens`) as files: one per key in a folder only this user may
read, written whole (a temporary file renamed over the old one) so a crash never leaves half a token."""

import os
from pathlib import Path

import anyio

_CHUNK = 64 * 1024


class LocalTokens:
    where = "local"

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._prefix = os.path.join(folder, "")  # the folder and its separator: a record's path is this + its key

    def _path(self, key: str) -> str:
        # Keys are digests: anything else could name a file outside the folder. ASCII letters and digits only, checked
        # on the key's bytes: `str.isalnum` looks each character up in Unicode's tables (~3k instructions a read).
        if not (key.isascii() and key.encode().isalnum()):
            raise ValueError(f"token key {key!r} is not a digest")
        return self._prefix + key  # not `os.path.join` per read: every admitted call reads one

    async def put(self, key: str, sealed: bytes) -> None:
        path = self._path(key)
        await anyio.to_thread.run_sync(_write, path, sealed)

    async def get(self, key: str) -> bytes | None:
        # Read here, not in a worker thread: every call to an OAuth server reads its caller's record (so a sign-out in
        # another process stops their next call), and a thread's round trip cost more than the read of a file this
        # small (~70 µs against ~20 µs, and far more waiting for a core on a busy machine: bench/oauth_latency.py).
        # By descriptor, not `open()`: its buffered file object cost more than the three system calls (8 against 3.5
        # µs per read). A record is well under one chunk, but a longer file is still read to its end.
        try:
            fd = os.open(self._path(key), os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        try:
            chunks = [os.read(fd, _CHUNK)]
            while len(chunks[-1]) == _CHUNK:  # a short read of a regular file is its end
                chunks.append(os.read(fd, _CHUNK))
            return b"".join(chunks)
        finally:
            os.close(fd)

    async def delete(self, key: str) -> None:
        await anyio.Path(self._path(key)).unlink(missing_ok=True)


def _write(name: str, sealed: bytes) -> None:
    path = Path(name)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(sealed)
    os.replace(tmp, path)
