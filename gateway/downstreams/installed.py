"""What a prepared `package:`/`npm:` environment holds, checked against the installers' own records: cheap enough
(15-40 µs a file: tens of milliseconds for thousands) to run before every start of its server and on every
`gateway prepare`.

PyPI: from the pinned distribution through the requirements its metadata declares (those its markers select, with
the extras asked for, as `pip check` reads them), each distribution is installed at a version its dependant
accepts, and each file its RECORD lists is there at its recorded size; the programs are the files in `bin/` those
RECORDs list. Sizes, not hashes: deletion and truncation are what happens to a folder by accident, and hashes would
read every byte (0.8 s for mcp-atlassian's 94 MB) while a hand that rewrites files can rewrite RECORD beside them.
Compiled `.pyc` files are skipped: a cache Python rewrites. npm keeps no per-file record: the pinned package's
package.json at the pinned version, its bins, and every package npm's hidden lockfile
(`node_modules/.package-lock.json`) says it installed, at that version. A venv's programs must also start a Python
that is there (a folder moved elsewhere names the old one).
"""

import csv
import json
import os
import re
from dataclasses import dataclass, field
from email.parser import HeaderParser
from importlib.metadata import PathDistribution
from pathlib import Path
from typing import Any

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name


@dataclass(slots=True)
class Checked:
    """What was looked at (`count` files, or npm packages), what is wrong (`problems`, [] when intact) and the
    programs the records declare (names in `bin/`, or the pinned npm package's bins)."""

    count: int = 0
    problems: list[str] = field(default_factory=list)
    programs: list[str] = field(default_factory=list)


def pypi(root: Path, pin: Requirement) -> Checked:
    """The venv at `root` against the pinned requirement `pin` (name, extras, `==` version)."""
    checked = Checked()
    site = next(root.glob("lib/python*/site-packages"), None)
    if site is None:
        checked.problems.append("lib/python*/site-packages is missing")
        return checked
    try:
        installed = {
            canonicalize_name(entry.name.partition("-")[0]): PathDistribution(Path(entry.path))
            for entry in os.scandir(site)
            if entry.name.endswith(".dist-info") and entry.is_dir()
        }
    except OSError as exc:
        checked.problems.append(f"{site.relative_to(root)} cannot be read ({exc.strerror})")
        return checked
    extras_seen: dict[str, set[str]] = {}
    wanted: list[tuple[Requirement, str]] = [(pin, "")]  # with who required it ("": the config's pin)
    while wanted:
        requirement, by = wanted.pop()
        key = canonicalize_name(requirement.name)
        dist = installed.get(key)
        if dist is None:
            checked.problems.append(f"{requirement.name} ({f'required by {by}' if by else 'the pin'}) is not installed")
            continue
        version, requires = _metadata(dist)
        if version is None:
            checked.problems.append(f"{requirement.name}: its METADATA is missing")
            continue
        if not requirement.specifier.contains(version, prereleases=True):
            needs = f"{by} needs" if by else "the pin is"
            checked.problems.append(f"{requirement.name} {version} is installed; {needs} {requirement.specifier}")
        seen = extras_seen.setdefault(key, set())
        first, extras = not seen, ({""} | requirement.extras) - seen
        seen |= extras
        if not extras:  # met before with these extras: its requirements are on their way
            continue
        label = f"{requirement.name} {version}"
        if first:
            _record(checked, dist, label, site, root / "bin")
        for line in requires:
            try:
                needed = Requirement(line)
            except InvalidRequirement:
                checked.problems.append(f"{label}: its METADATA has an unreadable requirement {line!r}")
                continue
            if _selected(needed.marker, extras, first):
                wanted.append((needed, label))
    checked.programs.sort()
    checked.problems.extend(_moved(root / "bin", checked.programs))
    return checked


def _moved(folder: Path, programs: list[str]) -> list[str]:
    """A venv's scripts start its Python by absolute path: a folder moved elsewhere runs one that is not there."""
    for program in programs:
        try:
            with (folder / program).open("rb") as handle:
                python = _interpreter(handle.read(512))
        except OSError:
            continue  # missing: the record check names it
        if python is not None and not os.path.exists(python):
            return [f"bin/{program} starts {python}, which is not there (was the folder moved?)"]
    return []


def _interpreter(head: bytes) -> str | None:
    """The absolute path a script's first line starts, also in pip's form for long paths or ones with spaces
    (`#!/bin/sh`, then `'''exec' "/path/python" "$0" "$@"`); None for anything else."""
    first, _, rest = head.partition(b"\n")
    if not first.startswith(b"#!/"):
        return None
    words = first[2:].split()
    if words and words[0] == b"/bin/sh":
        launcher = re.match(rb"'''exec' (\"[^\"]+\"|\S+)", rest)
        words = [launcher.group(1).strip(b'"')] if launcher else []
    return words[0].decode(errors="replace") if words else None


def _metadata(dist: PathDistribution) -> tuple[str | None, list[str]]:
    """Version and Requires-Dist from METADATA's headers alone: the long description after them is most of the
    parsing time (two thirds of the whole check when parsed with it)."""
    text = dist.read_text("METADATA")
    if text is None:
        return None, []
    headers = HeaderParser().parsestr(text.partition("\n\n")[0])
    return headers["Version"], headers.get_all("Requires-Dist") or []


def _selected(marker: Marker | None, extras: set[str], first: bool) -> bool:
    """A requirement applies for these newly asked extras; an unconditional one is taken on the first visit only."""
    if marker is None:
        return first
    return any(marker.evaluate({"extra": extra}) for extra in extras)


def _record(checked: Checked, dist: PathDistribution, label: str, site: Path, bin_dir: Path) -> None:
    """Each file `dist`'s RECORD lists: there, at its size; those in `bin_dir` are programs."""
    text = dist.read_text("RECORD")
    if text is None:
        checked.problems.append(f"{label}: its RECORD is missing")
        return
    missing: list[str] = []
    resized: list[str] = []
    folder, bin_folder = str(site), str(bin_dir)
    for row in csv.reader(text.splitlines()):
        if not row or not row[0] or row[0].endswith(".pyc"):
            continue
        checked.count += 1
        path = os.path.normpath(os.path.join(folder, row[0]))
        if os.path.dirname(path) == bin_folder:  # declared, whether there or not: a missing one is damage
            checked.programs.append(os.path.basename(path))
        try:
            size = os.stat(path).st_size
        except OSError:
            missing.append(row[0])
            continue
        if len(row) > 2 and row[2].isdigit() and int(row[2]) != size:
            resized.append(row[0])
    root = bin_dir.parent
    for files, what in ((missing, "missing"), (resized, "not at the size its RECORD says")):
        if files:
            example = os.path.relpath(os.path.normpath(os.path.join(site, files[0])), root)
            more = f" ({len(files)} files, e.g. {example})" if len(files) > 1 else f" ({example})"
            checked.problems.append(f"{label}: files {what}{more}")


def npm(root: Path, name: str, version: str) -> Checked:
    """The npm folder at `root` against the pinned package `name`@`version`."""
    checked = Checked(count=1)
    modules = root / "node_modules"
    manifest = _manifest(modules / name)
    if manifest is None:
        checked.problems.append(f"node_modules/{name}/package.json is missing or unreadable")
        return checked
    if manifest.get("version") != version:
        checked.problems.append(f"{name} is at {manifest.get('version')!r}, not the pinned {version}")
    bins = manifest.get("bin") or {}
    checked.programs = (
        [name.rpartition("/")[2]] if isinstance(bins, str) else sorted(bins) if isinstance(bins, dict) else []
    )
    for program in checked.programs:
        if not (modules / ".bin" / program).exists():  # follows the link to the package's own file
            checked.problems.append(f"node_modules/.bin/{program} is missing or points at nothing")
    try:
        lockfile = json.loads((modules / ".package-lock.json").read_text())
    except (OSError, ValueError):
        lockfile = {}  # written by npm 7 and later; without it the pinned package alone is checked
    listed = lockfile.get("packages") if isinstance(lockfile, dict) else None
    missing: list[str] = []
    for where, entry in (listed if isinstance(listed, dict) else {}).items():
        if not isinstance(entry, dict) or not where.startswith("node_modules/") or entry.get("link"):
            continue
        if where == f"node_modules/{name}":
            continue
        checked.count += 1
        found = _manifest(root / where)
        if found is None or found.get("version") != entry.get("version", found.get("version")):
            missing.append(where)
    if missing:
        checked.problems.append(
            f"{len(missing)} of the {checked.count - 1} packages npm installed beside it are missing or at another "
            f"version (e.g. {missing[0]})"
        )
    return checked


def _manifest(folder: Path) -> dict[str, Any] | None:
    try:
        manifest = json.loads((folder / "package.json").read_text())
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) else None
