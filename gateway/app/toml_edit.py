"""A client's TOML config (Codex's `config.toml`) edited in place with tomlkit, which keeps what it does not touch as
it was: other tables, comments, blank lines, key order and quoting.

The servers table may be a section (`[mcp_servers.other]`), dotted keys or an inline table
(`mcp_servers = { other = {...} }`): the entry is added in the same form (an inline table gets an inline entry:
a second `[mcp_servers.NAME]` section would declare the key twice). An existing entry is changed key by key, so
its comments and the keys this does not set stay; the lines added end as the file's do (CRLF or LF). The result is
parsed again (by the standard library's parser, not tomlkit) and must hold exactly the data intended, or nothing is
written.
"""

import re
import tomllib
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import InlineTable, Table

from gateway.app.userfile import Invalid, Unintended


def load(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise Invalid(f"not valid TOML ({exc})") from None


def snippet(key: str, name: str, entry: dict[str, Any]) -> str:
    return tomlkit.dumps({key: {name: entry}})


def entries(text: str, key: str) -> dict[str, Any]:
    """The servers `text` holds under `key`."""
    servers = load(text).get(key, {})
    if not isinstance(servers, dict):
        raise Invalid(f"expected {key} to be a table, found {type(servers).__name__}")
    return servers


def put(text: str, key: str, name: str, entry: dict[str, Any]) -> str:
    """`text` with `entry` as `[key.name]`: keys of the entry there that `entry` lacks are removed, keys whose value
    differs are set, the rest of the file unchanged."""
    entries(text, key)
    data = load(text)
    try:
        document = tomlkit.parse(text)
    except TOMLKitError as exc:  # valid TOML that tomlkit cannot take: say so rather than guess
        raise Invalid(f"tomlkit cannot edit it ({exc})") from None
    servers = document.get(key)
    if servers is None:
        servers = tomlkit.table(is_super_table=True)  # written as [key.name], not an empty [key] above it
        document[key] = servers
    current = servers.get(name)
    if isinstance(current, Table | InlineTable):
        for gone in [k for k in current if k not in entry]:
            del current[gone]
        for k, value in entry.items():
            if current.get(k) != value:
                current[k] = value
    else:
        new = tomlkit.inline_table() if isinstance(servers, InlineTable) else tomlkit.table()
        new.update(entry)
        servers[name] = new
    edited = tomlkit.dumps(document)
    if "\n" in text and text.count("\n") == text.count("\r\n"):  # tomlkit adds lines with \n: a CRLF file stays one
        edited = re.sub(r"(?<!\r)\n", "\r\n", edited)
    data.setdefault(key, {})[name] = entry
    if load(edited) != data:  # a guard: the edit must hold exactly what was meant
        raise Unintended()
    return edited
