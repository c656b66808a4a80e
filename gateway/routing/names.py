"""Exposed names: `<server><sep><name>`, never longer than the limit, never colliding."""

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable

_HASH_LEN = 8
_NOT_STRICT = re.compile(r"[^A-Za-z0-9_-]")


def _part(name: str, sep: str) -> str:
    """A tool's own name; without `.` in the separator, every character outside `[A-Za-z0-9_-]` becomes `_`
    (`workflows.list` -> `workflows_list`), so the whole name suits the strictest clients."""
    return name if "." in sep else _NOT_STRICT.sub("_", name)


def _short(server: str, name: str, sep: str, max_length: int, hash_len: int) -> str:
    digest = hashlib.sha256(f"{server}\0{name}".encode()).hexdigest()[:hash_len]
    keep = max_length - hash_len - 1
    return f"{server}{sep}{_part(name, sep)}"[:keep] + "-" + digest


def assign(
    pairs: Iterable[tuple[str, str]], sep: str, max_length: int, bare: frozenset[str] = frozenset()
) -> dict[tuple[str, str], str]:
    """Map each (server, original name) to its exposed name.

    Servers in `bare` (config `prefix: false`) keep their own names, unless they would collide.

    A name that fits stays `<server><sep><name>`; a longer one becomes its first characters plus
    `-` and a hash of (server, name), so it is stable across restarts. Names are then checked as a
    set: any that coincide (e.g. with separator `_`, `a_b`+`c` and `a`+`b_c`) are all replaced by
    their hashed form, with longer hashes until the set is collision-free.
    """
    names = {(server, name): name if server in bare else f"{server}{sep}{_part(name, sep)}" for server, name in pairs}
    for key, full in names.items():
        if len(full) > max_length:
            names[key] = _short(*key, sep, max_length, _HASH_LEN)
    hash_len = _HASH_LEN
    while True:
        groups: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for key, exposed in names.items():
            groups[exposed].append(key)
        clashes = [keys for keys in groups.values() if len(keys) > 1]
        if not clashes:
            return names
        for keys in clashes:
            for key in keys:
                names[key] = _short(*key, sep, max_length, hash_len)
        hash_len += 4
