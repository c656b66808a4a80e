"""The workflow library on disk: `*.yaml` files from a list of folders, parsed once per file version."""

import hashlib
import time
from collections import OrderedDict
from dataclasses import replace
from pathlib import Path
from typing import Any

from gateway.config.reading import FastLoader, decode, parse_yaml, read_bytes
from gateway.errors import ConfigError
from gateway.think.errors import ThinkError
from gateway.think.format import check_name
from gateway.think.workflow import Workflow, parse


def _refused(exc: ConfigError) -> ThinkError:
    return ThinkError("YAML_SCHEMA_VIOLATION", str(exc).splitlines(), "Fix the file where the problem says.")


def _text(path: Path) -> str:
    try:
        return decode(read_bytes(path), str(path))
    except ConfigError as exc:  # unreadable, too big, not UTF-8
        raise _refused(exc) from None


def parsed(path: Path, text: str) -> Any:
    """A workflow file's YAML, bounded as the config's is (`gateway.config.reading`), parsed by libyaml.

    Raises:
        ThinkError: YAML_SCHEMA_VIOLATION naming the file and line.
    """
    try:
        return parse_yaml(text, str(path), FastLoader)
    except ConfigError as exc:
        raise _refused(exc) from None


SETTLE_NS = 2_000_000_000
"""How long a folder must have been unchanged before its listing is kept (`Library._files`)."""
PINNED = 64
"""Older versions of workflows kept parsed (those runs are pinned to), least recently used dropped first."""


def _modified(directory: Path) -> int | None:
    try:
        return directory.stat().st_mtime_ns
    except OSError:  # not there (yet): listed as empty, and looked for again next time
        return None


def content_digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]


class Library:
    """`*.yaml` workflows from a list of folders; earlier folders win on equal names.

    Parsed workflows are cached by file modification time, so listing and every plan/next do not
    re-read and re-validate unchanged files, while an edited file is picked up at once.
    """

    def __init__(self, dirs: list[Path]) -> None:
        self.dirs = dirs
        self._parsed: dict[Path, tuple[float, Workflow]] = {}
        self._listed: tuple[tuple[int | None, ...], dict[str, Path]] | None = None
        """The last listing and its folders' modification times (`_files`)."""
        self._pinned: OrderedDict[tuple[str, str], Workflow] = OrderedDict()

    def _files(self) -> dict[str, Path]:
        """Name -> file, earlier folders first. Listed again only when a folder changed: asked on every call of a
        session shown a subset of tools ("is there any workflow"), a glob of each folder was most of that question's
        cost. A folder changed within SETTLE_NS of the listing is listed again next time too: its modification time
        ticks coarsely, so a file added in the same tick would not change it."""
        now, stamps = time.time_ns(), tuple(_modified(d) for d in self.dirs)
        if self._listed is not None and self._listed[0] == stamps:
            return self._listed[1]
        files: dict[str, Path] = {}
        for directory in self.dirs:
            for path in sorted(directory.glob("*.yaml")) + sorted(directory.glob("*.yml")):
                files.setdefault(path.stem, path)
        settled = all(stamp is None or now - stamp >= SETTLE_NS for stamp in stamps)
        self._listed = (stamps, files) if settled else None
        return files

    def names(self) -> list[str]:
        return sorted(self._files())

    def _path(self, name: str, files: dict[str, Path] | None = None) -> Path:
        path = (files if files is not None else self._files()).get(check_name("workflow", name))
        if path is None:
            known = ", ".join(self.names()) or "none"
            raise ThinkError("UNKNOWN_WORKFLOW", f"no workflow {name!r}", f"Call think.workflows.list. Known: {known}.")
        return path

    def raw(self, name: str) -> tuple[Path, str]:
        """Raises: ThinkError UNKNOWN_WORKFLOW, or YAML_SCHEMA_VIOLATION (unreadable, too big, not UTF-8)."""
        path = self._path(name)
        return path, _text(path)

    def get(self, name: str, files: dict[str, Path] | None = None) -> Workflow:
        """Raises: ThinkError UNKNOWN_WORKFLOW or YAML_SCHEMA_VIOLATION (malformed YAML included)."""
        path = self._path(name, files)
        mtime = path.stat().st_mtime
        cached = self._parsed.get(path)
        if cached is not None and cached[0] == mtime:
            return cached[1]
        text = _text(path)
        workflow = replace(parse(parsed(path, text), str(path)), digest=content_digest(text), text=text)
        if workflow.name != name:
            raise ThinkError(
                "YAML_SCHEMA_VIOLATION",
                [f"{path}: name: {workflow.name!r} does not match the file name {name!r}"],
                "Name the file after the workflow.",
            )
        self._parsed[path] = (mtime, workflow)
        return workflow

    def pinned(self, name: str, text: str, source: str) -> Workflow:
        """The version of `name` whose file text was `text` (a run's, stored when it was planned), parsed once.

        Raises: ThinkError YAML_SCHEMA_VIOLATION (a stored text that no longer parses: the engine changed)."""
        key = (name, content_digest(text))
        workflow = self._pinned.get(key)
        if workflow is None:
            workflow = replace(parse(parsed(Path(source), text), source), digest=key[1], text=text)
            self._pinned[key] = workflow
            while len(self._pinned) > PINNED:
                self._pinned.popitem(last=False)
        self._pinned.move_to_end(key)
        return workflow

    def all(self) -> tuple[list[Workflow], list[ThinkError]]:
        """Every workflow that loads, and the errors of those that do not (listing must not fail on one bad file)."""
        good, bad = self.loaded()
        return good, list(bad.values())

    def loaded(self) -> tuple[list[Workflow], dict[str, ThinkError]]:
        """Every workflow that loads, and by name the error of each that does not."""
        files = self._files()
        good: list[Workflow] = []
        bad: dict[str, ThinkError] = {}
        for name in sorted(files):
            try:
                good.append(self.get(name, files))
            except ThinkError as exc:
                bad[name] = exc
        return good, bad
