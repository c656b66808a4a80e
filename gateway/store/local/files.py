"""A file written whole or not at all: the one writer of every file the gateway writes in place of another (its run
records and spills, and the files of a user's it edits or creates: `gateway connect --write`, `gateway init`).

The bytes go to a temporary file in the same folder (a rename across file systems is a copy, not atomic), which is
fsynced, given its mode, and renamed over the target; then the folder is fsynced, so the rename itself survives a
crash. On any failure (a full disk, a file-size limit, a folder that cannot be written) the temporary file is
removed and the target is as it was: a reader sees the old bytes or the new, never a mix or a stump.
"""

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

TEMP_SUFFIX = ".tmp"
"""A temporary file is `.<target's stem>.<8 random characters>.tmp` beside the target (`LocalRuns` sweeps the ones a
killed writer left by that pattern)."""


def _fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_whole(
    path: Path,
    data: bytes,
    *,
    mode: int | None = None,
    owner: tuple[int, int] | None = None,
    check: Callable[[], None] | None = None,
) -> None:
    """Replace (or create) `path` with `data`, atomically and durably. `mode`: the file's permission bits (default:
    0o600, `mkstemp`'s: the gateway's own records are private); `owner`: its (uid, gid), when not the writer's;
    `check`: called when the data is on disk, just before the rename, so the slow part (fsync) is behind it; it may
    raise, and the target stays as it was."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
            if owner is not None:
                os.fchown(f.fileno(), *owner)
            if mode is not None:
                os.fchmod(f.fileno(), mode)  # after chown, which may clear set-id bits
        if check is not None:
            check()
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_folder(path.parent)
