"""`gateway connect CLIENT`: each client's snippet, stdio and HTTP, checked against the format that client documents
(schemas below, each citing its source), merged into an existing file without losing what is there, and a printed
stdio command that really starts this gateway."""

import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import Client, StdioServerParameters

from gateway.app.connect import connect, entry
from tests.harness import ROOT, cli, kitchen, unmeasured, write_config

URL = "http://127.0.0.1:8765/mcp"
KEPT = "; the rest of the file is kept as it was"
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


GATEWAY = [sys.executable, "-m", "gateway"]


def run(argv: list[str], *, stdin: str | None = None, user: int | None = None) -> subprocess.CompletedProcess[str]:
    """`argv` unmeasured: its cases are a process that may not write (a file-size limit, another user), which could
    not save coverage's data either, and coverage would say so on the stderr the cases read."""
    env = {**unmeasured(), "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        argv, input=stdin, cwd=ROOT, env=env, user=user, capture_output=True, text=True, timeout=60, check=False
    )


def parsed(client: str, text: str) -> dict[str, Any]:
    document: dict[str, Any] = tomllib.loads(text) if client == "codex" else json.loads(text)
    assert list(document) == [TOP.get(client, "mcpServers")]
    return document


@pytest.mark.parametrize("client", sorted(SCHEMAS))
def test_each_clients_snippet_matches_its_documented_format_for_stdio_and_http(client: str, tmp_path: Path) -> None:
    stdio_schema, http_schema = SCHEMAS[client]
    config = write_config(tmp_path, {})
    done, http = cli("connect", client, "--config", str(config)), cli("connect", client, "--http", URL)
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
    done = cli("connect", "vscode", "--http", URL, "--write", "--file", str(path))
    assert done.returncode == 0 and done.stdout.strip() == f"added servers.gateway in {path}{KEPT}"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["inputs"] == mine["inputs"] and data["servers"]["other"] == mine["servers"]["other"]
    assert data["servers"]["gateway"] == {"type": "http", "url": URL}
    again = cli("connect", "vscode", "--write", "--file", str(path))
    said = f"updated servers.gateway in {path} (replaced type; added command, args; removed url){KEPT}"
    assert again.stdout.strip() == said
    assert json.loads(path.read_text(encoding="utf-8"))["servers"]["gateway"]["type"] == "stdio"
    same = cli("connect", "vscode", "--write", "--file", str(path))
    assert same.stdout.strip() == f"servers.gateway in {path} is already as it should be; nothing written"


def test_write_to_the_clients_own_file_under_home_and_a_broken_file_is_named_not_overwritten(tmp_path: Path) -> None:
    done = cli("connect", "gemini", "--http", URL, "--write", home=tmp_path)
    assert done.returncode == 0, done.stderr
    settings = tmp_path / ".gemini" / "settings.json"
    assert json.loads(settings.read_text(encoding="utf-8")) == {"mcpServers": {"gateway": {"httpUrl": URL}}}
    settings.write_text('{"theme": "Dracula",', encoding="utf-8")
    broken = cli("connect", "gemini", "--write", home=tmp_path)
    assert broken.returncode == 1 and f"{settings}: not valid JSON (line 1, column 21:" in broken.stderr
    assert settings.read_text(encoding="utf-8") == '{"theme": "Dracula",'


def test_write_appends_to_codex_toml_keeping_comments_and_updates_its_own_table_in_place(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('# mine\nmodel = "o3"\n\n[mcp_servers.other]\ncommand = "x"\n', encoding="utf-8")
    done = cli("connect", "codex", "--http", URL, "--write", "--file", str(path))
    assert done.returncode == 0, done.stderr
    text = path.read_text(encoding="utf-8")
    assert text.startswith('# mine\nmodel = "o3"\n\n[mcp_servers.other]\ncommand = "x"\n')
    assert tomllib.loads(text)["mcp_servers"]["gateway"] == {"url": URL}
    path.write_text(text.replace(f'url = "{URL}"', f'url = "{URL}" # the team one\nstartup_timeout_sec = 20'))
    again = cli("connect", "codex", "--http", URL + "/v2", "--write", "--file", str(path))
    assert again.returncode == 0 and "(replaced url; kept your startup_timeout_sec)" in again.stdout
    written = path.read_text(encoding="utf-8")
    assert f'url = "{URL}/v2" # the team one\nstartup_timeout_sec = 20' in written
    assert written.count("[mcp_servers.gateway]") == 1


@pytest.mark.anyio
async def test_the_printed_stdio_command_starts_this_gateway(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"k": kitchen("k")})
    server = json.loads(cli("connect", "cursor", "--config", str(config)).stdout)["mcpServers"]["gateway"]
    params = StdioServerParameters(command=server["command"], args=server["args"], env={"PYTHONPATH": str(ROOT)})
    with anyio.fail_after(60):
        async with Client(params, mode="legacy") as client:
            assert "k.echo" in {t.name for t in (await client.list_tools()).tools}


def cursor_config(size: int) -> str:
    """A Cursor config of at least `size` bytes: servers of the user's, each with its own settings."""
    servers: dict[str, Any] = {}
    while len(text := json.dumps({"mcpServers": servers}, indent=2) + "\n") < size:
        servers[f"server{len(servers)}"] = {"command": "npx", "args": ["-y", f"@scope/server-{len(servers)}"]}
    return text


def leftovers(folder: Path, *mine: Path) -> list[str]:
    """Files in `folder` other than `mine`: a temporary file a failed write left would show here."""
    return sorted(p.name for p in folder.iterdir() if p not in mine)


@pytest.mark.parametrize(("client", "name", "limit"), [("cursor", "mcp.json", 8192), ("codex", "config.toml", 4096)])
def test_a_write_cut_short_by_a_file_size_limit_leaves_the_file_byte_identical_and_says_so(
    client: str, name: str, limit: int, tmp_path: Path
) -> None:
    """The case as reported: 14 KB of Cursor JSON / 10 KB of Codex TOML under `prlimit --fsize`. The process
    ignores SIGXFSZ (Python does, from start-up), so the write fails with EFBIG instead of killing it."""
    assert shutil.which("prlimit"), "util-linux's prlimit is needed"
    path = tmp_path / name
    if client == "codex":
        original = "".join(
            f'# server {i}\n[mcp_servers.s{i}]\ncommand = "npx"\nargs = ["-y", "s{i}"]\n\n' for i in range(200)
        )
    else:
        original = cursor_config(14_000)
    path.write_text(original, encoding="utf-8")
    before = path.read_bytes()
    assert len(before) > limit
    done = run(["prlimit", f"--fsize={limit}", *GATEWAY, "connect", client, "--write", "--file", str(path)])
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip() == (
        f"gateway connect: cannot write {path}: File too large (EFBIG); it is unchanged; it would pass this "
        "process's file-size limit: raise the limit (ulimit -f), then run this again"
    )
    assert path.read_bytes() == before and leftovers(tmp_path, path) == []


def test_a_full_disk_leaves_the_file_byte_identical_and_says_so(tmp_path: Path) -> None:
    """A real full disk: a 64 KiB tmpfs in a mount namespace of its own (needs root and util-linux's unshare)."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare to mount a small file system")
    disk, path = tmp_path / "disk", tmp_path / "disk" / "mcp.json"
    disk.mkdir()
    original = cursor_config(40_000)  # fits once in 64 KiB, not twice
    argv = " ".join(shlex.quote(a) for a in [*GATEWAY, "connect", "cursor", "--write", "--file", str(path)])
    script = f"mount -t tmpfs -o size=64k tmpfs {disk} && cat > {path} && {{ {argv}; echo rc=$? >&2; cat {path}; }}"
    done = run(["unshare", "--mount", "sh", "-c", script], stdin=original)
    if "mount:" in done.stderr:
        pytest.skip(f"cannot mount here: {done.stderr.strip()}")
    assert "rc=1" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert f"gateway connect: cannot write {path}: No space left on device (ENOSPC); it is unchanged" in done.stderr
    assert done.stdout == original  # read back inside the namespace, after the failed write


def test_a_folder_that_cannot_be_written_leaves_the_file_and_says_so(tmp_path: Path) -> None:
    """EACCES: the file may be written but its folder may not (no temporary file can be made beside it). Run as
    `nobody`, on a file of theirs, when the tests run as root, who may write anywhere."""
    folder = Path(tempfile.mkdtemp()) if os.geteuid() == 0 else tmp_path / "locked"
    try:
        folder.mkdir(exist_ok=True)
        path = folder / "mcp.json"
        path.write_text('{"mcpServers": {}}', encoding="utf-8")
        if os.geteuid() == 0:
            os.chown(path, 65534, 65534)  # nobody's own file, in a folder that is not theirs
        folder.chmod(0o755 if os.geteuid() == 0 else 0o555)
        done = run(
            [*GATEWAY, "connect", "cursor", "--write", "--file", str(path)], user=65534 if os.geteuid() == 0 else None
        )
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.strip() == (
            f"gateway connect: cannot write {path}: Permission denied (EACCES); it is unchanged; make its folder "
            "writable for you, or choose another path, then run this again"
        )
        assert path.read_text(encoding="utf-8") == '{"mcpServers": {}}'
    finally:
        folder.chmod(0o755)
        if os.geteuid() == 0:
            shutil.rmtree(folder)


def test_a_file_of_another_user_is_refused_not_taken_over() -> None:
    """Writable by all (0666) but root's: the rename would hand it to the caller, so `nobody` is refused."""
    if os.geteuid() != 0:
        pytest.skip("only root can make a file another user's")
    folder = Path(tempfile.mkdtemp())
    try:
        folder.chmod(0o777)
        path = folder / "mcp.json"
        path.write_text("{}", encoding="utf-8")
        path.chmod(0o666)
        done = run([*GATEWAY, "connect", "cursor", "--write", "--file", str(path)], user=65534)
        assert done.returncode == 1 and done.stderr.strip() == (
            f"gateway connect: {path} belongs to another user (uid 0); rewriting it would make it yours, so it is "
            "left as it is: run this as its owner"
        )
        assert path.read_text(encoding="utf-8") == "{}" and path.stat().st_uid == 0
    finally:
        shutil.rmtree(folder)


def sparse(path: Path, size: int) -> None:
    """A file of `size` bytes that takes no disk."""
    path.write_bytes(b"")
    os.truncate(path, size)


def loop(path: Path, other: Path) -> None:
    path.symlink_to(other)
    other.symlink_to(path)


@pytest.mark.parametrize(
    ("case", "made"),
    [
        ("not UTF-8", lambda p: p.write_bytes(b'{"mcpServers": {"caf\xe9": {}}}')),
        ("a folder", lambda p: p.mkdir()),
        ("read-only", lambda p: (p.write_text("{}"), p.chmod(0o444))),
        ("not JSON", lambda p: p.write_text('{"mcpServers": {"a": 1,,}}')),
        ("not an object", lambda p: p.write_text('{"mcpServers": ["a"]}')),
        ("a pipe", os.mkfifo),  # reading it would wait for a writer for ever
        ("too big", lambda p: sparse(p, 17 * 1024 * 1024)),
        ("a loop of links", lambda p: loop(p, p.with_name("b"))),
    ],
)
def test_a_file_that_cannot_be_edited_is_refused_in_one_line_and_left_untouched(
    case: str, made: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mcp.json"
    made(path)
    before = path.read_bytes() if path.is_file() and case != "too big" else None
    assert connect("cursor", config=None, url=URL, name="gateway", write=True, file=path) == 1
    said = capsys.readouterr()
    expected = {
        "not UTF-8": f"{path} is not UTF-8 (byte 0xe9 at offset 20); save it as UTF-8",
        "a folder": f"{path} is a folder, not a file; name the file itself (--file PATH)",
        "read-only": f"{path} is read-only (mode 0444); it is left as it is. If it may be changed: chmod u+w {path}",
        "not JSON": f"{path}: not valid JSON (line 1, column 24: Expecting property name enclosed in double quotes)",
        "not an object": f"{path}: expected a JSON object with an object 'mcpServers'",
        "a pipe": f"{path} is not a regular file; name the config file itself (--file PATH)",
        "too big": f"{path} is 17,825,792 bytes, more than any client's config (16,777,216); check that it is",
        "a loop of links": f"{path} is a symbolic link that leads round in a loop; fix the link",
    }[case]
    assert said.out == "" and said.err.startswith(f"gateway connect: {expected}") and said.err.count("\n") == 1
    assert (path.read_bytes() if path.is_file() and case != "too big" else None) == before
    assert leftovers(tmp_path, path, path.with_name("b")) == []


def test_an_existing_entrys_own_settings_are_kept_and_the_output_says_exactly_what_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mcp.json"
    theirs = {"env": {"TOKEN": "x"}, "autoApprove": ["k.echo"], "timeout": 120, "disabled": False, "alwaysAllow": ["a"]}
    path.write_text(json.dumps({"mcpServers": {"gateway": {"url": "http://old/mcp", **theirs}}}, indent=2))
    assert connect("cursor", config=None, url=URL, name="gateway", write=True, file=path) == 0
    assert capsys.readouterr().out == (
        f"updated mcpServers.gateway in {path} (replaced url; kept your env, autoApprove, timeout, disabled, "
        f"alwaysAllow){KEPT}\n"
    )
    assert json.loads(path.read_text())["mcpServers"]["gateway"] == {"url": URL, **theirs}
    assert connect("cursor", config=None, url=None, name="gateway", write=True, file=path) == 0
    assert "(added command, args; removed url; kept your env, autoApprove, timeout, disabled, alwaysAllow)" in (
        capsys.readouterr().out
    )
    assert json.loads(path.read_text())["mcpServers"]["gateway"] == {**entry("cursor", config=None, url=None), **theirs}


def test_vscode_jsonc_with_comments_trailing_commas_and_a_bom_keeps_every_other_byte(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mcp.json"
    mine = (
        "\ufeff// VS Code's MCP servers\n{\n"
        '    "inputs": [ /* none yet */ ],\n'
        '    "servers": {\n'
        '        "other": { "type": "http", "url": "x", }, // the team one\n'
        "    },\n}\n"
    )
    path.write_text(mine, encoding="utf-8")
    path.chmod(0o640)
    assert connect("vscode", config=None, url=URL, name="gateway", write=True, file=path) == 0
    assert capsys.readouterr().out == f"added servers.gateway in {path}{KEPT}\n"
    gateway_entry = '        "gateway": {\n            "type": "http",\n            "url": "' + URL + '"\n        },\n'
    assert path.read_text(encoding="utf-8") == mine.replace("    },\n}", gateway_entry + "    },\n}")
    assert path.read_bytes().startswith(b"\xef\xbb\xbf") and stat.S_IMODE(path.stat().st_mode) == 0o640


def test_codex_with_an_inline_servers_table_gets_an_inline_entry_not_a_second_declaration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.toml"
    path.write_text('model = "o3"  # mine\nmcp_servers = { other = { command = "x" } }\n', encoding="utf-8")
    assert connect("codex", config=None, url=URL, name="gateway", write=True, file=path) == 0
    text = path.read_text(encoding="utf-8")
    assert text.startswith('model = "o3"  # mine\n')
    assert tomllib.loads(text)["mcp_servers"] == {"other": {"command": "x"}, "gateway": {"url": URL}}


def test_a_path_with_an_emoji_is_written_as_itself_for_codex(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "🚀 team").mkdir()
    config = write_config(tmp_path / "🚀 team", {})
    assert connect("codex", config=config, url=None, name="gateway", write=False, file=None) == 0
    printed = capsys.readouterr().out
    assert "\\ud83d" not in printed and tomllib.loads(printed)["mcp_servers"]["gateway"]["args"][-1] == str(config)
    path = tmp_path / "config.toml"
    assert connect("codex", config=config, url=None, name="gateway", write=True, file=path) == 0
    assert tomllib.loads(path.read_text(encoding="utf-8"))["mcp_servers"]["gateway"]["args"][-1] == str(config)


def test_a_symlinked_config_is_written_through_the_link_and_stays_a_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Dotfiles managers link `~/.cursor/mcp.json` to a file in a repository: replacing the link with a file would
    quietly fork the user's config."""
    real, link = tmp_path / "dotfiles" / "mcp.json", tmp_path / "mcp.json"
    real.parent.mkdir()
    real.write_text('{"mcpServers": {}}', encoding="utf-8")
    link.symlink_to(real)
    assert connect("cursor", config=None, url=URL, name="gateway", write=True, file=link) == 0
    assert link.is_symlink() and json.loads(real.read_text())["mcpServers"]["gateway"] == {"url": URL}


@pytest.mark.parametrize("given", ["notaurl", "127.0.0.1:8765/mcp", "ftp://host/mcp", "http:///mcp"])
def test_an_http_address_that_is_not_a_url_is_refused_before_anything_is_written(given: str, tmp_path: Path) -> None:
    """The client is given the URL as it is: one it cannot use is refused with an example, the file untouched."""
    done = cli("connect", "cursor", "--http", given, "--write", "--file", str(tmp_path / "mcp.json"))
    assert done.returncode == 2 and not (tmp_path / "mcp.json").exists()
    assert f"--http: {given!r} is not an http(s) URL of a gateway (http://127.0.0.1:8765/mcp)" in done.stderr
