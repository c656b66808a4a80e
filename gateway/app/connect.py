"""`gateway connect CLIENT`: the snippet that client's own config file needs to start (stdio) or reach (HTTP) this
gateway; with `--write`, merged into that file, keeping everything else in it: the file's other entries, comments
and layout (`jsonc_edit`, `toml_edit`), and the user's own settings of an existing entry (`merged`). The file is
written whole or not at all, and a file that cannot be edited is refused in one line, untouched (`userfile`).

Each client's format, as its documentation gives it (tests/app/test_connect.py checks each against it):
- Claude Code: `.mcp.json`, `mcpServers`, `type` "stdio" | "http" (code.claude.com/docs/en/mcp).
- Claude Desktop: `claude_desktop_config.json`, `mcpServers` with command/args; stdio only in the file (remote
  servers are added as connectors in its settings) (modelcontextprotocol.io/quickstart/user).
- Cline: `cline_mcp_settings.json`, `mcpServers`; remote: `type` "streamableHttp" + `url`
  (docs.cline.bot/mcp/configuring-mcp-servers).
- Cursor: `~/.cursor/mcp.json`, `mcpServers`; remote: `url` (cursor.com/docs/context/mcp).
- VS Code: `.vscode/mcp.json`, `servers` with `type` "stdio" | "http" (code.visualstudio.com/docs/copilot/reference/
  mcp-configuration).
- Windsurf: `~/.codeium/windsurf/mcp_config.json`, `mcpServers`; remote: `serverUrl` (docs.windsurf.com, Cascade MCP).
- Codex CLI: `~/.codex/config.toml`, `[mcp_servers.NAME]` with command/args, or `url` (Streamable HTTP)
  (developers.openai.com/codex/mcp).
- Gemini CLI: `~/.gemini/settings.json`, `mcpServers`; Streamable HTTP: `httpUrl` (geminicli.com/docs/tools/mcp-server).
"""

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gateway.app import jsonc_edit, toml_edit, userfile
from gateway.app.launcher import launch


@dataclass(frozen=True, slots=True)
class Client:
    file: str  # where the client reads it (~ is the user's home); --file overrides
    key: str  # the JSON object holding the servers
    stdio_type: str | None  # the `type` a stdio entry carries, when the format has one
    url_field: str | None  # where an HTTP entry puts its URL; None: the file takes no HTTP server
    http_type: str | None = None


CLIENTS: dict[str, Client] = {
    "claude-code": Client(".mcp.json", "mcpServers", "stdio", "url", "http"),
    "claude-desktop": Client(
        "~/.config/Claude/claude_desktop_config.json"
        if sys.platform.startswith("linux")
        else "~/Library/Application Support/Claude/claude_desktop_config.json",
        "mcpServers",
        None,
        None,
    ),
    "cline": Client("~/.cline/data/settings/cline_mcp_settings.json", "mcpServers", None, "url", "streamableHttp"),
    "cursor": Client("~/.cursor/mcp.json", "mcpServers", None, "url"),
    "vscode": Client(".vscode/mcp.json", "servers", "stdio", "url", "http"),
    "windsurf": Client("~/.codeium/windsurf/mcp_config.json", "mcpServers", None, "serverUrl"),
    "codex": Client("~/.codex/config.toml", "mcp_servers", None, "url"),
    "gemini": Client("~/.gemini/settings.json", "mcpServers", None, "httpUrl"),
}


class ConnectError(Exception):
    """What the user asked cannot be done as asked; the message says what to do instead."""


def entry(client: str, *, config: Path | None, url: str | None) -> dict[str, Any]:
    """The one server entry `client` needs."""
    spec = CLIENTS[client]
    if url is None:
        started = launch(config)
        if started.note is not None:
            print(f"gateway connect: {started.note}", file=sys.stderr)  # noqa: T201 -- beside the entry, not in it
        body: dict[str, Any] = {"command": started.command, "args": started.args}
        return {"type": spec.stdio_type, **body} if spec.stdio_type else body
    if spec.url_field is None:
        raise ConnectError(
            f"{client} reads only stdio servers from its file; add {url} in its settings (Connectors) instead, "
            f"or connect it over stdio: gateway connect {client}"
        )
    return {"type": spec.http_type, spec.url_field: url} if spec.http_type else {spec.url_field: url}


def snippet(client: str, name: str, body: dict[str, Any]) -> str:
    if client == "codex":
        return toml_edit.snippet(CLIENTS[client].key, name, body)
    return json.dumps({CLIENTS[client].key: {name: body}}, indent=2, ensure_ascii=False)


OURS = frozenset({"type", "transportType", "command", "args", "url", "httpUrl", "serverUrl"})
"""The keys of an entry that say how to reach the server: `connect` writes them; every other key of an existing
entry (env, cwd, timeout, disabled, autoApprove, alwaysAllow, ...) is the user's and is kept."""


def merged(old: Any, body: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The entry to write in place of `old` (None: there is none), and what that does, in words."""
    if old is None:
        return body, "added"
    if not isinstance(old, dict):
        return body, f"replaced (it was {json.dumps(old, ensure_ascii=False)[:40]}, not an entry)"
    new = body | {k: v for k, v in old.items() if k not in OURS}  # how to reach it first, then the user's keys
    said = [
        f"{verb} {', '.join(keys)}"
        for verb, keys in (
            ("replaced", [k for k in body if k in old and old[k] != body[k]]),
            ("added", [k for k in body if k not in old]),
            ("removed", [k for k in old if k in OURS and k not in body]),
            ("kept your", [k for k in old if k not in OURS]),
        )
        if keys
    ]
    return new, f"updated ({'; '.join(said)})"


def merge(client: str, path: Path, name: str, body: dict[str, Any]) -> str:
    """Write `body` as server `name` into `path`, keeping the rest; what was done, in words."""
    file = userfile.read(path)
    key = CLIENTS[client].key
    edit = toml_edit if client == "codex" else jsonc_edit
    try:
        old = edit.entries(file.text, key).get(name)
        new, done = merged(old, body)
        if new == old:
            return f"{key}.{name} in {path} is already as it should be; nothing written"
        text = edit.put(file.text, key, name, new)
    except userfile.Invalid as exc:
        raise ConnectError(f"{path}: {exc}; it is left as it is: {exc.advice}") from None
    userfile.write(file, text)
    verb, _, how = done.partition(" ")
    return f"{verb} {key}.{name} in {path}{' ' + how if how else ''}; the rest of the file is kept as it was"


def connect(client: str, *, config: Path | None, url: str | None, name: str, write: bool, file: Path | None) -> int:
    try:
        body = entry(client, config=config, url=url)
        if not write:
            print(snippet(client, name, body))  # noqa: T201 -- the CLI's output
            return 0
        print(merge(client, file or Path(CLIENTS[client].file).expanduser(), name, body))  # noqa: T201
        return 0
    except (ConnectError, userfile.FileRefused) as exc:
        print(f"gateway connect: {exc}", file=sys.stderr)  # noqa: T201
        return 1
