"""A client's JSON config edited in place: one server entry set, every other byte of the file kept.

Client files are JSON, often with comments and trailing commas (VS Code's `mcp.json` is JSONC). The text is read
by a small scanner that knows strings and comments: it blanks comments and trailing commas (same length, so the
standard library's `json` parses the rest and its errors name the file's own line and column) and notes where each
object member's value starts and ends. The entry's new text is spliced in there: the file's other entries,
comments, trailing commas, order, indentation and line endings stay as they were, byte for byte; only the entry
written is laid out anew (a comment inside it is not kept). The result is read again and must hold exactly the
data intended, or nothing is written.

Evaluated and not used: `json5` and `commentjson` read JSONC but write it back without its comments; `jsonc-edit`
(Microsoft's jsonc-parser) needs Node at run time; `json-five` keeps comments in its model, but its pure-Python
parser took 0.2 s for a 15 KB file and 53 s to edit one of 460 KB, and its last release is from 2024.
"""

import json
import re
from dataclasses import dataclass, field
from typing import Any

from gateway.app.userfile import Invalid, Unintended

_TOKEN = re.compile(
    r"""(?P<space>[ \t\r\n]+) | (?P<comment>//[^\n]* | /\*.*?\*/) | (?P<string>"(?:[^"\\\n]|\\.)*")
      | (?P<punct>[{}\[\]:,]) | (?P<atom>[^\s{}\[\]:,"/]+)""",
    re.VERBOSE | re.DOTALL,
)


@dataclass
class _Value:
    """Where a value is in the text; an object's members too (name, where its key starts, its value)."""

    start: int
    end: int
    members: list[tuple[str, int, "_Value"]] = field(default_factory=list)
    trailing_comma: bool = False

    def member(self, name: str) -> "_Value | None":
        """The last member called `name` (as JSON parsers take duplicates), or None."""
        return next((value for key, _, value in reversed(self.members) if key == name), None)


def load(text: str) -> Any:
    """The data `text` holds (`{}` for an empty file), or `Invalid` naming the first error's line and column."""
    return _read(text)[0] if text.strip() else {}


def entries(text: str, key: str) -> dict[str, Any]:
    """The servers `text` holds under `key`."""
    return _servers(load(text), key)


def put(text: str, key: str, name: str, value: dict[str, Any]) -> str:
    """`text` with `value` as `[key][name]` (in place of what was there), the rest of it unchanged."""
    if not text.strip():
        return json.dumps({key: {name: value}}, indent=2, ensure_ascii=False) + "\n"
    data, root = _read(text)
    _servers(data, key)[name] = value
    edit = _Edit(text, root)
    servers = root.member(key)
    if servers is None:
        edited = edit.insert(root, key, {name: value})
    else:
        entry = servers.member(name)
        edited = edit.insert(servers, name, value) if entry is None else edit.replace(entry, value)
    if load(edited) != data:  # a guard: the splice must hold exactly what was meant
        raise Unintended()
    return edited


def _servers(data: Any, key: str) -> dict[str, Any]:
    servers = data.setdefault(key, {}) if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise Invalid(f"expected a JSON object with an object {key!r}")
    return servers


def _read(text: str) -> tuple[Any, _Value]:
    """The data and where its values are."""
    tokens: list[tuple[str, int, int]] = []
    at = 0
    while at < len(text):
        match = _TOKEN.match(text, at)
        if match is None:
            what = "an unterminated string or comment" if text[at] in '"/' else f"unexpected {text[at]!r}"
            line, column = text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)
            raise Invalid(f"not valid JSON (line {line}, column {column}: {what})")
        tokens.append((match.lastgroup or "", match.start(), match.end()))
        at = match.end()
    marks = [(s, e) for kind, s, e in tokens if kind not in ("space", "comment")]
    blank = [(s, e) for kind, s, e in tokens if kind == "comment"]
    blank += [  # a trailing comma: after a value, before the close (`,,}` stays, for `json` to point at)
        (s, e)
        for (p, _), (s, e), (n, _) in zip(marks, marks[1:], marks[2:], strict=False)
        if text[s] == "," and text[n] in "}]" and text[p] not in ",:{["
    ]
    plain = list(text)
    for s, e in blank:
        plain[s:e] = re.sub(r"[^\n]", " ", text[s:e])
    try:
        data = json.loads("".join(plain))
    except json.JSONDecodeError as exc:
        raise Invalid(f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    return data, _value(text, marks, 0)[1]


def _value(text: str, marks: list[tuple[int, int]], k: int) -> tuple[int, _Value]:
    """The value whose first token is `marks[k]` (in valid JSON: `json` has read it): the index after it, and it."""
    start, end = marks[k]
    opening = text[start]
    if opening not in "{[":
        return k + 1, _Value(start, end)
    value, k = _Value(start, start), k + 1
    while text[marks[k][0]] not in "}]":
        if opening == "{":
            key_start, key_end = marks[k]
            k, member = _value(text, marks, k + 2)  # past the key and its colon
            value.members.append((json.loads(text[key_start:key_end]), key_start, member))
        else:
            k, _ = _value(text, marks, k)
        if text[marks[k][0]] == ",":
            k += 1
            value.trailing_comma = text[marks[k][0]] in "}]"
    value.end = marks[k][1]
    return k + 1, value


class _Edit:
    """Splices into `text`, laid out as the file is: its indent unit (None: a file written on one line) and its
    line ending."""

    def __init__(self, text: str, root: _Value) -> None:
        self.text = text
        self.newline = "\r\n" if "\r\n" in text else "\n"
        self.unit = self._indent(root.members[0][1]) if root.members else "  "

    def _before(self, at: int) -> str:
        """What precedes offset `at` on its line."""
        return self.text[self.text.rfind("\n", 0, at) + 1 : at]

    def _indent(self, at: int) -> str | None:
        """The whitespace before offset `at` on its line, if nothing else is before it there."""
        before = self._before(at)
        return before if not before.strip() else None

    def _leading(self, at: int) -> str:
        """The whitespace that starts the line of offset `at`."""
        before = self._before(at)
        return before[: len(before) - len(before.lstrip())]

    def render(self, value: Any, indent: str) -> str:
        if self.unit is None:
            return json.dumps(value, ensure_ascii=False)
        return json.dumps(value, indent=self.unit, ensure_ascii=False).replace("\n", self.newline + indent)

    def replace(self, old: _Value, value: Any) -> str:
        return self.text[: old.start] + self.render(value, self._leading(old.start)) + self.text[old.end :]

    def insert(self, obj: _Value, name: str, value: Any) -> str:
        """Add member `name` last in `obj`, on a line of its own before the closing brace (in a file laid out on
        lines), matching the object's trailing comma; a comma goes right after the last value, before any comment
        on its line."""
        close = obj.end - 1
        outer = self._leading(obj.start)
        inner = (self._indent(obj.members[0][1]) if obj.members else None) or outer + (self.unit or "")
        member = f"{json.dumps(name, ensure_ascii=False)}: {self.render(value, inner)}"
        trailing = "," if obj.trailing_comma else ""
        line = self.text.rfind("\n", 0, close) + 1
        if self.unit is None:
            at, addition = close, f"{' ' if obj.members else ''}{member}{trailing}"
        elif not self.text[line:close].strip():
            at, addition = line, f"{inner}{member}{trailing}{self.newline}"
        else:
            at, addition = close, f"{self.newline}{inner}{member}{trailing}{self.newline}{outer}"
        text = self.text[:at] + addition + self.text[at:]
        if obj.members and not obj.trailing_comma:  # before `at`: that splice left this offset where it was
            end = obj.members[-1][2].end
            text = text[:end] + "," + text[end:]
        return text
