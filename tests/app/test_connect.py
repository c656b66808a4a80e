"""`gateway connect CLIENT`: each client's snippet, stdio and HTTP, checked against the format that client documents
(schemas below, each citing its source), merged into an existing file without losing what is there, and a printed
stdio command that really starts this gateway."""

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import Client, StdioServerParameters

from tests.harness import ROOT, kitchen, write_config

URL = "http://127.0.0.1:8765/mcp"
STRINGS = {"type": "array", "items": {"type": "string"}}


def obj(required: dict[str, Any], **optional: Any) -> dict[str, Any]:
    """An object with exactly these keys (the required ones always present)."""
    props = {**required, **optional}
    return {"type": "object", "required": list(required), "properties": props, "additionalProperties": False}


STDIO = obj({"command": {"type": "string", "minLength": 1}, "args": STRINGS})
# Each client's documented server entry: (stdio, HTTP or None where its file takes no HTTP server).
SCHEMAS: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {
    # code.claude.com/docs/en/mcp: `.mcp.json` {"mcpServers": {name: {"type": "stdio"|"http", ...}}}
    "claude-code": (
        obj({"type": {"const": "stdio"}, "command": {"type": "string"}, "args": STRINGS}),
        obj({"type": {"const": "http"}, "url": {"type": "string", "format": "uri"}}),
    ),
    # modelcontextprotocol.io/quickstart/user: claude_desktop_config.json takes command/args (stdio) only
    "claude-desktop": (STDIO, None),
    # docs.cline.bot/mcp/configuring-mcp-servers: remote entries are {"type": "streamableHttp", "url": ...}
    "cline": (STDIO, obj({"type": {"const": "streamableHttp"}, "url": {"type": "string"}})),
    # cursor.com/docs/context/mcp: ~/.cursor/mcp.json, remote entries are {"url": ...}
    "cursor": (STDIO, obj({"url": {"type": "string"}})),
    # code.visualstudio.com/docs/copilot/reference/mcp-configuration: top-level "servers", `type` required
    "vscode": (
        obj({"type": {"const": "stdio"}, "command": {"type": "string"}, "args": STRINGS}),
        obj({"type": {"const": "http"}, "url": {"type": "string"}}),
    ),
    # Windsurf's Cascade MCP docs: ~/.codeium/windsurf/mcp_config.json, remote entries use "serverUrl"
    "windsurf": (STDIO, obj({"serverUrl": {"type": "string"}})),
    # developers.openai.com/codex/mcp: [mcp_servers.NAME] with command/args, or url (Streamable HTTP)
    "codex": (STDIO, obj({"url": {"type": "string"}})),
    # geminicli.com/docs/tools/mcp-server: mcpServers; Streamable HTTP is "httpUrl" ("url" would be SSE)
    "gemini": (STDIO, obj({"httpUrl": {"type": "string"}})),
}
TOP = {"vscode": "servers", "codex": "mcp_servers"}


def gateway(*args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)} | ({"HOME": str(home)} if home else {})
    argv = [sys.executable, "-m", "gateway", *args]
    return subprocess.run(argv, cwd=home or ROOT, env=env, capture_output=True, text=True, timeout=60, check=False)


def gateways(*runs: tuple[str, ...]) -> list[subprocess.CompletedProcess[str]]:
    """`gateway` with each argument list, the processes run at once (their start-ups overlap)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = [
        subprocess.Popen(
            [sys.executable, "-m", "gateway", *args],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for args in runs
    ]
    try:
        said = [process.communicate(timeout=60) for process in started]
    finally:
        for process in started:
            if process.poll() is None:
                process.kill()
                process.wait()
    return [subprocess.CompletedProcess(p.args, p.returncode, *out) for p, out in zip(started, said, strict=True)]


def parsed(client: str, text: str) -> dict[str, Any]:
    document: dict[str, Any] = tomllib.loads(text) if client == "codex" else json.loads(text)
    assert list(document) == [TOP.get(client, "mcpServers")]
    return document


@pytest.mark.parametrize("client", sorted(SCHEMAS))
def test_each_clients_snippet_matches_its_documented_format_for_stdio_and_http(client: str, tmp_path: Path) -> None:
    stdio_schema, http_schema = SCHEMAS[client]
    config = write_config(tmp_path, {})
    done, http = gateways(("connect", client, "--config", str(config)), ("connect", client, "--http", URL))
    assert done.returncode == 0, done.stderr
    server = parsed(client, done.stdout)[TOP.get(client, "mcpServers")]["gateway"]
    jsonschema.validate(server, stdio_schema)
    assert Path(server["command"]).is_absolute() and server["args"][-2:] == ["--config", str(config)]
    if http_schema is None:
        assert http.returncode == 1 and f"{client} reads only stdio servers from its file" in http.stderr
        return
    assert http.returncode == 0, http.stderr
    jsonschema.validate(parsed(client, http.stdout)[TOP.get(client, "mcpServers")]["gateway"], http_schema)


def test_write_merges_into_a_json_file_keeping_its_other_servers_and_settings(tmp_path: Path) -> None:
    path = tmp_path / ".vscode" / "mcp.json"
    path.parent.mkdir()
    mine: dict[str, Any] = {
        "inputs": [{"id": "tok", "type": "promptString"}],
        "servers": {"other": {"type": "http", "url": "x"}},
    }
    path.write_text(json.dumps(mine), encoding="utf-8")
    done = gateway("connect", "vscode", "--http", URL, "--write", "--file", str(path))
    assert done.returncode == 0 and done.stdout.strip() == f"added servers.gateway in {path}"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["inputs"] == mine["inputs"] and data["servers"]["other"] == mine["servers"]["other"]
    assert data["servers"]["gateway"] == {"type": "http", "url": URL}
    again = gateway("connect", "vscode", "--write", "--file", str(path))
    assert again.stdout.strip() == f"replaced servers.gateway in {path}"
    assert json.loads(path.read_text(encoding="utf-8"))["servers"]["gateway"]["type"] == "stdio"


def test_write_to_the_clients_own_file_under_home_and_a_broken_file_is_named_not_overwritten(tmp_path: Path) -> None:
    done = gateway("connect", "gemini", "--http", URL, "--write", home=tmp_path)
    assert done.returncode == 0, done.stderr
    settings = tmp_path / ".gemini" / "settings.json"
    assert json.loads(settings.read_text(encoding="utf-8")) == {"mcpServers": {"gateway": {"httpUrl": URL}}}
    settings.write_text('{"theme": "Dracula",', encoding="utf-8")
    broken = gateway("connect", "gemini", "--write", home=tmp_path)
    assert broken.returncode == 1 and f"{settings}: not valid JSON (line 1" in broken.stderr
    assert settings.read_text(encoding="utf-8") == '{"theme": "Dracula",'


def test_write_appends_to_codex_toml_keeping_comments_and_refuses_a_second_table(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('# mine\nmodel = "o3"\n\n[mcp_servers.other]\ncommand = "x"\n', encoding="utf-8")
    done = gateway("connect", "codex", "--http", URL, "--write", "--file", str(path))
    assert done.returncode == 0, done.stderr
    text = path.read_text(encoding="utf-8")
    assert text.startswith('# mine\nmodel = "o3"\n') and tomllib.loads(text)["mcp_servers"]["gateway"] == {"url": URL}
    again = gateway("connect", "codex", "--write", "--file", str(path))
    assert (
        again.returncode == 1 and "already has [mcp_servers.gateway]; remove it or pick another --name" in again.stderr
    )
    assert path.read_text(encoding="utf-8") == text


@pytest.mark.anyio
async def test_the_printed_stdio_command_starts_this_gateway(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"k": kitchen("k")})
    server = json.loads(gateway("connect", "cursor", "--config", str(config)).stdout)["mcpServers"]["gateway"]
    params = StdioServerParameters(command=server["command"], args=server["args"], env={"PYTHONPATH": str(ROOT)})
    with anyio.fail_after(60):
        async with Client(params, mode="legacy") as client:
            assert "k.echo" in {t.name for t in (await client.list_tools()).tools}
