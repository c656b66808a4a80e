"""`gateway connect CLIENT`: the snippet that client's own config file needs to start (stdio) or reach (HTTP) this
gateway; with `--write`, merged into that file, keeping everything else in it.

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
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any


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


def launcher(config: Path | None) -> tuple[str, list[str]]:
    """The command and arguments that start this very gateway on stdio, with absolute paths."""
    script = Path(sys.executable).parent / "gateway"  # the console script installed beside this Python
    command, args = (str(script), ["serve"]) if script.is_file() else (sys.executable, ["-m", "gateway", "serve"])
    return command, args + (["--config", str(config.resolve())] if config is not None else [])


def entry(client: str, *, config: Path | None, url: str | None) -> dict[str, Any]:
    """The one server entry `client` needs."""
    spec = CLIENTS[client]
    if url is None:
        command, args = launcher(config)
        body: dict[str, Any] = {"command": command, "args": args}
        return {"type": spec.stdio_type, **body} if spec.stdio_type else body
    if spec.url_field is None:
        raise ConnectError(
            f"{client} reads only stdio servers from its file; add {url} in its settings (Connectors) instead, "
            f"or connect it over stdio: gateway connect {client}"
        )
    return {"type": spec.http_type, spec.url_field: url} if spec.http_type else {spec.url_field: url}


def snippet(client: str, name: str, body: dict[str, Any]) -> str:
    if client == "codex":
        return _toml_table(name, body)
    return json.dumps({CLIENTS[client].key: {name: body}}, indent=2)


def _toml_table(name: str, body: dict[str, Any]) -> str:
    key = name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else json.dumps(name)  # TOML's bare keys, else quoted
    lines = [f"[mcp_servers.{key}]"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in body.items()]  # JSON strings/arrays are valid TOML
    return "\n".join(lines) + "\n"


def merge(client: str, path: Path, name: str, body: dict[str, Any]) -> str:
    """Write `body` as server `name` into `path`, keeping the rest; what was done, in words."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if client == "codex":
        try:
            present = name in tomllib.loads(text).get("mcp_servers", {})
        except tomllib.TOMLDecodeError as exc:
            raise ConnectError(f"{path}: not valid TOML ({exc}); fix it, then run this again") from None
        if present:  # appending a second table would make the file invalid; rewriting it would drop comments
            raise ConnectError(f"{path} already has [mcp_servers.{name}]; remove it or pick another --name")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + ("\n" if text and not text.endswith("\n") else "") + _toml_table(name, body))
        return f"added [mcp_servers.{name}] to {path}"
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise ConnectError(
            f"{path}: not valid JSON (line {exc.lineno}: {exc.msg}); fix it, then run this again"
        ) from None
    key = CLIENTS[client].key
    if not isinstance(data, dict) or not isinstance(data.get(key, {}), dict):
        raise ConnectError(f"{path}: expected a JSON object with an object {key!r}; fix it, then run this again")
    servers = data.setdefault(key, {})
    verb = "replaced" if name in servers else "added"
    servers[name] = body
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return f"{verb} {key}.{name} in {path}"


def connect(client: str, *, config: Path | None, url: str | None, name: str, write: bool, file: Path | None) -> int:
    try:
        body = entry(client, config=config, url=url)
        if not write:
            print(snippet(client, name, body))  # noqa: T201 -- the CLI's output
            return 0
        print(merge(client, file or Path(CLIENTS[client].file).expanduser(), name, body))  # noqa: T201
        return 0
    except ConnectError as exc:
        print(f"gateway connect: {exc}", file=sys.stderr)  # noqa: T201
        return 1
