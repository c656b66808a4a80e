"""A user's own file that a command edits (a client's config: `gateway connect --write`) or creates (`gateway init`):
read strictly, written whole (`store.local.files.write_whole`), and never lost.

Whatever goes wrong (not UTF-8, a folder, read-only, a full disk, a file-size limit, a folder that cannot be
written) is one line naming the file, what the system said and what to do, and the file is as it was. Kept as it
was: a UTF-8 byte-order mark, the file's mode and owner (`sudo gateway connect` leaves a user's file theirs), and a
symbolic link (the file it points at is written, so a dotfiles link stays a link). Not kept: hard links to the file
(the rename gives it a new inode). A file changed by someone else between the read and the write (the client
saving its settings) is not overwritten: the edit is refused and the other writer's text stays. The check is made
when the new text is on disk, just before the rename, so only a write in that instant could still be lost; two
gateway processes editing one file at once are not serialised beyond that.
"""

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from gateway.store.local.files import write_whole

BOM = "\ufeff"
MAX_BYTES = 16 * 1024 * 1024
"""Larger is not a client's config (they are kilobytes): most likely a wrong --file, read whole otherwise."""

_ADVICE = {
    errno.EFBIG: "it would pass this process's file-size limit: raise the limit (ulimit -f)",
    errno.ENOSPC: "the disk is full: free some space",
    errno.EDQUOT: "the disk quota is used up: free some space",
    errno.EACCES: "make its folder writable for you, or choose another path",
    errno.EPERM: "make its folder writable for you, or choose another path",
    errno.EROFS: "the file system is read-only: choose another path",
}


class FileRefused(Exception):
    """The file cannot be read or written as asked; the message (one line) says why and what to do."""


class Invalid(ValueError):
    """The file's text is not what the command can edit (the message, one line, says where); `advice`: what to do."""

    def __init__(self, message: str, advice: str = "fix it, then run this again") -> None:
        super().__init__(message)
        self.advice = advice


class Unintended(Invalid):
    """An editor's last guard: the edited text, read again, must hold exactly the data meant."""

    def __init__(self) -> None:
        super().__init__(
            "the edit did not come out as intended, so nothing was written",
            "please report this as a bug of the gateway, with the file if you can",
        )


@dataclass(frozen=True, slots=True)
class UserFile:
    path: Path  # as the user named it (for messages)
    target: Path  # the file written: `path` with symbolic links resolved
    text: str  # without the byte-order mark; "" for a file that does not exist yet
    bom: bool
    mode: int | None  # permission bits to keep; None: a new file
    seen: tuple[int, int, int, int, int] | None  # inode, size, mtime, uid, gid when read: changed since, it is refused


def read(path: Path) -> UserFile:
    """`path` as text, or a refusal saying why it cannot be edited."""
    try:
        target = path.resolve()  # a loop of links: RuntimeError before Python 3.13, OSError since
    except (RuntimeError, OSError):
        raise FileRefused(f"{path} is a symbolic link that leads round in a loop; fix the link") from None
    try:
        st = target.stat()
        if stat.S_ISDIR(st.st_mode):
            raise FileRefused(f"{path} is a folder, not a file; name the file itself (--file PATH)")
        if not stat.S_ISREG(st.st_mode):  # a pipe would block the read for ever, a device never ends
            raise FileRefused(f"{path} is not a regular file; name the config file itself (--file PATH)")
        if st.st_size > MAX_BYTES:
            raise FileRefused(
                f"{path} is {st.st_size:,} bytes, more than any client's config ({MAX_BYTES:,}); "
                "check that it is the file meant (--file PATH)"
            )
        raw = target.read_bytes()
    except FileNotFoundError:
        return UserFile(path, target, "", False, None, None)
    except OSError as exc:
        raise FileRefused(f"cannot read {path}: {exc.strerror}; fix that, then run this again") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileRefused(
            f"{path} is not UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}); save it as UTF-8, "
            "then run this again"
        ) from None
    mode = stat.S_IMODE(st.st_mode)
    if not mode & 0o222 or not os.access(target, os.W_OK):  # the bits too: root may write anything
        raise FileRefused(
            f"{path} is read-only (mode {mode:04o}); it is left as it is. If it may be changed: chmod u+w {path}, "
            "then run this again"
        )
    if os.geteuid() not in (0, st.st_uid):
        raise FileRefused(
            f"{path} belongs to another user (uid {st.st_uid}); rewriting it would make it yours, so it is left as it "
            "is: run this as its owner"
        )
    seen = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_uid, st.st_gid)
    return UserFile(path, target, text.removeprefix(BOM), text.startswith(BOM), mode, seen)


def write(file: UserFile, text: str) -> None:
    """Replace the file's text, keeping its byte-order mark and mode; a new file gets the user's default mode."""
    data = ((BOM if file.bom else "") + text).encode("utf-8")
    try:
        file.target.parent.mkdir(parents=True, exist_ok=True)
        owner = file.seen[3:] if file.seen and file.seen[3:] != (os.geteuid(), os.getegid()) else None
        mode = file.mode if file.mode is not None else _default_mode()
        write_whole(file.target, data, mode=mode, owner=owner, check=lambda: _unchanged(file))
    except OSError as exc:
        code = errno.errorcode.get(exc.errno or 0, "")
        state = "it is unchanged" if file.mode is not None else "nothing was written"
        advice = _ADVICE.get(exc.errno or 0, "fix that")
        raise FileRefused(
            f"cannot write {file.path}: {exc.strerror} ({code}); {state}; {advice}, then run this again"
        ) from None


def _unchanged(file: UserFile) -> None:
    try:
        st = file.target.stat()
        now: tuple[int, ...] | None = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_uid, st.st_gid)
    except FileNotFoundError:
        now = None
    if now != file.seen:
        raise FileRefused(
            f"{file.path} was changed by another program while this edited it; its text is left as that program "
            "wrote it: run this again"
        )


def _default_mode() -> int:
    """What `open()` would give a new file: 0o666 less the umask (read by setting it, so set back at once)."""
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask
