"""A client's JSON config edited in place: one server entry set, every other byte of the file kept.

Client files are JSON, often with comments and trailing commas (VS Code's `mcp.json` is JSONC). json-five parses
them (JSON5, a superset of JSONC) into a model whose nodes know where they start and end, and the entry's new text
is spliced in there: the file's other entries, comments, trailing commas, order, indentation and line endings stay
as they were, byte for byte; only the entry written is laid out anew (a comment inside it is not kept). The result
is parsed again and must hold exactly the data intended, or nothing is written.

Evaluated and not used: `json5` and `commentjson` parse JSONC but write it back without its comments; `jsonc-edit`
(Microsoft's jsonc-parser) needs Node at run time; json-five's own model dumper lays out a new node on one line.
"""

import json
import re
from typing import Any

import json5
from json5.loader import ModelLoader
from json5.model import Identifier, JSONObject, Node, String


class Invalid(ValueError):
    """The text is not a JSON object this can edit; the message is one line."""


def load(text: str) -> Any:
    """The data `text` holds (`{}` for an empty file), or `Invalid` naming the first error's line and column."""
    if not text.strip():
        return {}
    try:
        return json5.loads(text)
    except json5.JSON5DecodeError as exc:
        raise Invalid(f"not valid JSON ({_first_error(exc)})") from None


def entries(text: str, key: str) -> dict[str, Any]:
    """The servers `text` holds under `key`."""
    data = load(text)
    servers = data.get(key, {}) if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise Invalid(f"expected a JSON object with an object {key!r}")
    return servers


def put(text: str, key: str, name: str, value: dict[str, Any]) -> str:
    """`text` with `value` as `[key][name]` (in place of what was there), the rest of it unchanged."""
    entries(text, key)
    data = load(text)
    if not text.strip():
        return json.dumps({key: {name: value}}, indent=2, ensure_ascii=False) + "\n"
    root = json5.loads(text, loader=ModelLoader()).value
    assert isinstance(root, JSONObject)  # `data` is a dict
    edit = _Edit(text, root)
    servers = _member(root, key)
    if servers is None:
        edited = edit.insert(root, key, {name: value})
    else:
        assert isinstance(servers, JSONObject)
        entry = _member(servers, name)
        edited = edit.insert(servers, name, value) if entry is None else edit.replace(entry, value)
    data.setdefault(key, {})[name] = value
    if load(edited) != data:  # a guard: the splice must hold exactly what was meant
        raise Invalid("the edit did not come out as intended, so nothing was written; please report this")
    return edited


def _first_error(exc: Exception) -> str:
    """json-five's message can run to many lines (every later error too); the first, in words a user reads."""
    first = next((line.strip() for line in str(exc).splitlines() if " at: line " in line), str(exc).splitlines()[0])
    where = re.search(r"line (\d+) column (\d+)", first)
    what = re.sub(r"^(The primary error was: )?", "", first.split(" at: ")[0]).rstrip(". ")
    return f"line {where[1]}, column {where[2]}: {what}" if where else what


def _member(obj: JSONObject, name: str) -> Node | None:
    """The value of `obj`'s member `name` (the last, as JSON parsers take it), or None."""
    found = None
    for key, value in obj.key_value_pairs:
        if (key.characters if isinstance(key, String) else key.name if isinstance(key, Identifier) else None) == name:
            found = value
    return found


class _Edit:
    """Splices into `text`, laid out as the file is: its indent unit (None: a file written on one line) and its
    line ending."""

    def __init__(self, text: str, root: JSONObject) -> None:
        self.text = text
        self.starts = [0, *(m.end() for m in re.finditer("\n", text))]
        self.newline = "\r\n" if "\r\n" in text else "\n"
        self.unit = self._indent(root.keys[0]) if root.keys else "  "

    def at(self, line: int | None, column: int | None) -> int:
        assert line is not None and column is not None  # a parsed node knows its place
        return self.starts[line - 1] + column

    def _before(self, node: Node) -> str:
        """What precedes `node` on its line."""
        start = self.at(node.lineno, node.col_offset)
        return self.text[self.text.rfind("\n", 0, start) + 1 : start]

    def _indent(self, node: Node) -> str | None:
        """The whitespace before `node` on its line, if nothing else is before it there."""
        before = self._before(node)
        return before if not before.strip() else None

    def _leading(self, node: Node) -> str:
        """The whitespace that starts `node`'s line."""
        before = self._before(node)
        return before[: len(before) - len(before.lstrip())]

    def render(self, value: Any, indent: str) -> str:
        if self.unit is None:
            return json.dumps(value, ensure_ascii=False)
        return json.dumps(value, indent=self.unit, ensure_ascii=False).replace("\n", self.newline + indent)

    def replace(self, old: Node, value: Any) -> str:
        start, end = self.at(old.lineno, old.col_offset), self.at(old.end_lineno, old.end_col_offset)
        return self.text[:start] + self.render(value, self._leading(old)) + self.text[end:]

    def insert(self, obj: JSONObject, name: str, value: Any) -> str:
        """Add member `name` last in `obj`, on a line of its own before the closing brace (in a file laid out on
        lines), matching the object's trailing comma; a comma goes right after the last value, before any comment
        on its line."""
        close = self.at(obj.end_lineno, obj.end_col_offset) - 1
        outer = self._leading(obj)
        inner = (self._indent(obj.keys[0]) if obj.keys else None) or outer + (self.unit or "")
        member = f"{json.dumps(name, ensure_ascii=False)}: {self.render(value, inner)}"
        trailing = "," if obj.trailing_comma is not None else ""
        line = self.text.rfind("\n", 0, close) + 1
        if self.unit is None:
            at, addition = close, f"{' ' if obj.keys else ''}{member}{trailing}"
        elif not self.text[line:close].strip():
            at, addition = line, f"{inner}{member}{trailing}{self.newline}"
        else:
            at, addition = close, f"{self.newline}{inner}{member}{trailing}{self.newline}{outer}"
        text = self.text[:at] + addition + self.text[at:]
        if obj.keys and obj.trailing_comma is None:  # before `at`: that splice left this offset where it was
            end = self.at(obj.values[-1].end_lineno, obj.values[-1].end_col_offset)
            text = text[:end] + "," + text[end:]
        return text
