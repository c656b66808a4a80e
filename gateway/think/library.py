"""The workflow library on disk: `*.yaml` files from a list of folders, parsed once per file version."""

from pathlib import Path
from typing import Any

import yaml

from gateway.think.errors import ThinkError
from gateway.think.workflow import Workflow, check_name, parse

# libyaml when available: pure-Python safe_load dominated listing 80 workflows (~0.5 s). Still the safe loader.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load_yaml(path: Path, text: str) -> Any:
    try:
        return yaml.load(text, Loader=_YAML_LOADER)  # noqa: TID251 -- CSafeLoader: safe_load, only faster
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "(file)"
        raise ThinkError(
            "YAML_SCHEMA_VIOLATION",
            [f"{path}: {where}: not valid YAML: {getattr(exc, 'problem', exc)}"],
            "Fix the YAML syntax at the line named.",
        ) from None


class Library:
    """`*.yaml` workflows from a list of folders; earlier folders win on equal names.

    Parsed workflows are cached by file modification time, so listing and every plan/next do not
    re-read and re-validate unchanged files, while an edited file is picked up at once.
    """

    def __init__(self, dirs: list[Path]) -> None:
        self.dirs = dirs
        self._parsed: dict[Path, tuple[float, Workflow]] = {}

    def _files(self) -> dict[str, Path]:
        files: dict[str, Path] = {}
        for directory in self.dirs:
            for path in sorted(directory.glob("*.yaml")) + sorted(directory.glob("*.yml")):
                files.setdefault(path.stem, path)
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
        path = self._path(name)
        return path, path.read_text(encoding="utf-8")

    def get(self, name: str, files: dict[str, Path] | None = None) -> Workflow:
        """Raises: ThinkError UNKNOWN_WORKFLOW or YAML_SCHEMA_VIOLATION (malformed YAML included)."""
        path = self._path(name, files)
        mtime = path.stat().st_mtime
        cached = self._parsed.get(path)
        if cached is not None and cached[0] == mtime:
            return cached[1]
        workflow = parse(_load_yaml(path, path.read_text(encoding="utf-8")), str(path))
        if workflow.name != name:
            raise ThinkError(
                "YAML_SCHEMA_VIOLATION",
                [f"{path}: name: {workflow.name!r} does not match the file name {name!r}"],
                "Name the file after the workflow.",
            )
        self._parsed[path] = (mtime, workflow)
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
