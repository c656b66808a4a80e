"""People's sealed OAuth tokens (`gateway.store.tokens.Tokens`) as files: one per key in a folder only this user may
read, written whole (a temporary file renamed over the old one) so a crash never leaves half a token."""

import os
from pathlib import Path

import anyio


class LocalTokens:
    where = "local"

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, key: str) -> Path:
        if not key.isalnum():  # keys are digests: anything else would name a file outside the folder
            raise ValueError(f"token key {key!r} is not a digest")
        return self.folder / key

    async def put(self, key: str, sealed: bytes) -> None:
        path = self._path(key)
        await anyio.to_thread.run_sync(_write, path, sealed)

    async def get(self, key: str) -> bytes | None:
        # Read here, not in a worker thread: every call to an OAuth server reads its caller's record (so a sign-out in
        # another process stops their next call), and a thread's round trip cost more than the read of a file this
        # small (~70 µs against ~20 µs, and far more waiting for a core on a busy machine: bench/oauth_latency.py).
        try:
            with open(self._path(key), "rb") as f:  # noqa: ASYNC230 -- a sealed token: under 1 KB, on local disk
                return f.read()
        except FileNotFoundError:
            return None

    async def delete(self, key: str) -> None:
        await anyio.Path(self._path(key)).unlink(missing_ok=True)


def _write(path: Path, sealed: bytes) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(sealed)
    os.replace(tmp, path)
