"""`success_schema` checks: named schemas (`workflows/schemas/*.json`) or inline ones; failures name field paths."""

import json
from pathlib import Path
from typing import Any

import jsonschema

from gateway.think.errors import ThinkError
from gateway.think.format import NAME, NAME_MAX, name_rule


def cut(text: str, keep: int = 80) -> str:
    return text if len(text) <= keep else f"{text[:keep]}… ({len(text)} characters)"


def _path(error: jsonschema.ValidationError) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path).lstrip(".") or "(root)"


def _named(path: Path) -> bool:
    """Whether `path` (`<dir>/<name>.json`) is a schema: a valid name, and a file that is in its folder itself (a
    symlink that leads out of the folder is not: a workflow cannot read a file elsewhere through it)."""
    name = path.name.removesuffix(".json")
    valid = len(name) <= NAME_MAX and NAME.fullmatch(name) is not None
    return valid and path.is_file() and path.resolve().parent == path.parent.resolve()


class Schemas:
    def __init__(self, dirs: list[Path]) -> None:
        self.dirs = dirs

    def _files(self) -> dict[str, Path]:
        """Every schema by name (the first folder's wins): the one rule for what is read and what a refusal lists
        as known (a name listed there that the reader then refused misled the model)."""
        found: dict[str, Path] = {}
        for directory in self.dirs:
            for path in sorted(directory.glob("*.json")):
                if _named(path):
                    found.setdefault(path.name.removesuffix(".json"), path)
        return found

    def get(self, name: str) -> dict[str, Any]:
        """Raises: ThinkError VALIDATION_FAILED when no such schema exists (the workflow names a missing file)."""
        if len(name) > NAME_MAX or not NAME.fullmatch(name):  # a name becomes a file name: never an OS error
            raise ThinkError("VALIDATION_FAILED", f"{cut(name)!r} is not a success schema's name", name_rule())
        files = self._files()
        path = files.get(name)
        if path is None:
            raise ThinkError(
                "VALIDATION_FAILED",
                f"no success schema {name!r}",
                f"Known schemas: {', '.join(sorted(files)) or 'none'}.",
            )
        try:
            schema: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:  # a broken file is the workflow author's to fix, never an internal error
            raise ThinkError("VALIDATION_FAILED", f"{path}: not valid JSON: {exc}", "Fix the file.") from None
        return schema

    def checked(self, schema: str | dict[str, Any]) -> dict[str, Any]:
        """The schema (named or inline), itself checked. Raises: ThinkError VALIDATION_FAILED (missing or invalid)."""
        body = self.get(schema) if isinstance(schema, str) else schema
        try:
            jsonschema.Draft202012Validator.check_schema(body)
        except jsonschema.SchemaError as exc:
            name = repr(schema) if isinstance(schema, str) else "the inline schema"
            raise ThinkError(
                "VALIDATION_FAILED",
                f"{name} is not a valid JSON Schema: {exc.message}",
                "Fix the schema (JSON Schema draft 2020-12).",
            ) from None
        return body

    def errors(self, schema: str | dict[str, Any], value: Any) -> list[dict[str, str]]:
        validator = jsonschema.Draft202012Validator(self.checked(schema))
        found = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        return [{"path": _path(e), "message": e.message} for e in found[:20]]

    def check(self, schema: str | dict[str, Any], value: Any, step_id: str) -> None:
        """Raises: ThinkError VALIDATION_FAILED with field paths; the step stays pending."""
        problems = self.errors(schema, value)
        if problems:
            name = schema if isinstance(schema, str) else "inline schema"
            raise ThinkError(
                "VALIDATION_FAILED",
                {"step_id": step_id, "schema": name, "errors": problems},
                f"Fix the fields named and call think.next for step {step_id!r} again; the step stays pending.",
            )
