"""The `gateway` command: `check` reports one problem per line (run in this process: it starts nothing), `tools`
lists the catalog (a real subprocess, starting its servers)."""

import json
import os
import subprocess
from pathlib import Path

import anyio
import pytest

from tests.harness import BOMB_CONFIG, ROOT, cli, gateway_command, kitchen, write_config

pytestmark = pytest.mark.anyio


async def gateway(*args: str) -> subprocess.CompletedProcess[bytes]:
    with anyio.fail_after(60):
        argv, env = gateway_command(list(args), os.environ)
        return await anyio.run_process(argv, cwd=str(ROOT), env=env, check=False)


def config_file(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "gateway.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


UNSET_VARS = (
    "servers:\n  k: {transport: stdio, command: python3, env: {A: '${GW_CLI_UNSET_A}', B: '${GW_CLI_UNSET_B}'}}\n"
)


async def test_check_accepts_a_good_config_and_exits_0(tmp_path: Path) -> None:
    path = write_config(tmp_path, {"k": kitchen("k")})
    done = cli("check", "--config", str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{path}: ok (1 servers: k)"


async def test_check_warns_about_a_command_not_on_path_but_still_passes(tmp_path: Path) -> None:
    path = write_config(tmp_path, {"k": {"transport": "stdio", "command": "surely-not-installed-gw"}})
    done = cli("check", "--config", str(path))
    assert done.returncode == 0
    assert f"{path}: servers.k.command: warning: 'surely-not-installed-gw' is not on PATH" in done.stderr


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "servers:\n  k: {transport: stdio, command: python3, timout_s: 3}\nlimits: {max_bytes: 1}\n",
            ["servers.k.timout_s: unknown key", "limits.max_bytes: unknown key"],
            id="unknown-keys",
        ),
        pytest.param(
            UNSET_VARS,
            [
                "servers.k.env.A: environment variable GW_CLI_UNSET_A is not set",
                "servers.k.env.B: environment variable GW_CLI_UNSET_B is not set",
            ],
            id="unset-vars",
        ),
        pytest.param(
            "servers:\n  k: {transport: http, timeout_s: soon}\n",
            [
                "servers.k.url: Field required",
                "servers.k.timeout_s: Input should be a valid number, unable to parse string as a number",
            ],
            id="wrong-type-and-missing-field",
        ),
        pytest.param(
            "servers:\n  k: {transport: stdio\n  j: 1\n",
            ["line 3: not valid YAML: expected ',' or '}', but got ':'"],
            id="invalid-yaml",
        ),
        pytest.param(
            BOMB_CONFIG,
            [
                "line 12: 101,253 nodes by here (values, lists, mappings; an alias counts as all it stands for), "
                "over the limit of 100,000; is it the right file? Nested aliases multiply"
            ],
            id="alias-bomb",
        ),
        pytest.param(
            "servers: {}\n# saved as Latin-1: caf\xe9\n".encode("latin-1"),
            ["line 2: byte 35 is 0xe9, not UTF-8; save the file as UTF-8"],
            id="latin-1-comment",
        ),
        pytest.param(
            "servers:\n  gateway: {transport: carrier-pigeon}\n",
            [
                "servers.gateway: namespace 'gateway' is reserved for the gateway's own tools",
                "servers.gateway.transport: unknown transport 'carrier-pigeon'; expected one of stdio, http, sse",
            ],
            id="reserved-namespace-and-transport",
        ),
    ],
)
async def test_check_prints_each_problem_on_its_own_line_with_file_and_key_path_and_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str | bytes, expected: list[str]
) -> None:
    monkeypatch.delenv("GW_CLI_UNSET_A", raising=False)
    monkeypatch.delenv("GW_CLI_UNSET_B", raising=False)
    path = config_file(tmp_path, text)
    done = cli("check", "--config", str(path))
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert sorted(lines) == sorted(f"{path}: {problem}" for problem in expected)


async def test_check_on_a_missing_file_exits_1_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    done = cli("check", "--config", str(path))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [f"{path}: (file): cannot read: No such file or directory"]


async def test_tools_json_lists_namespaced_tools_with_server_original_name_size_and_totals(tmp_path: Path) -> None:
    path = write_config(tmp_path, {"k": kitchen("k", "--extra-tool", "shout", tools={"exclude": ["crash"]})})
    done = await gateway("tools", "--config", str(path), "--json")
    assert done.returncode == 0, done.stderr.decode()
    report = json.loads(done.stdout)
    rows = {row["name"]: row for row in report["tools"]}
    assert rows["k.echo"]["server"] == "k" and rows["k.echo"]["original"] == "echo"
    assert rows["k.shout"]["original"] == "shout"
    assert "k.crash" not in rows
    assert all(row["chars"] > 50 for row in rows.values())  # the serialized definition, not a placeholder
    assert report["total_tools"] == len(rows)
    assert report["total_chars"] == sum(row["chars"] for row in rows.values())
    assert report["servers"]["k"]["state"] == "up"


async def test_check_warns_about_each_broken_workflow_naming_file_and_path(tmp_path: Path) -> None:
    """A broken workflow does not stop the gateway, but `check` shows it before an LLM trips over it."""
    flows = tmp_path / "flows"
    flows.mkdir()
    (flows / "broken_v1.yaml").write_text('name: broken_v1\nversion: "1"\nsteps: []\n', encoding="utf-8")
    path = write_config(tmp_path, {}, think={"workflows_dirs": ["flows"]})
    done = cli("check", "--config", str(path))
    assert done.returncode == 0
    assert f"{path}: think.workflows_dirs: warning: {flows / 'broken_v1.yaml'}: steps:" in done.stderr


async def test_tools_prints_what_each_mode_and_client_rule_lists_and_warns_above_client_caps(tmp_path: Path) -> None:
    rules = [{"client": "cursor*", "mode": "all"}]
    path = write_config(tmp_path, {"k": kitchen("k", "--tools", "150")}, exposure={"clients": rules})
    said: dict[str, subprocess.CompletedProcess[bytes]] = {}

    async def tools(label: str, *extra: str) -> None:
        said[label] = await gateway("tools", "--config", str(path), *extra)

    async with anyio.create_task_group() as both:  # two processes: their start-ups overlap
        both.start_soon(tools, "listed")
        both.start_soon(tools, "found", "--find", "synthetic catalog entry 042", "--limit", "2")
    done, found = said["listed"], said["found"]
    assert done.returncode == 0, done.stderr.decode()
    lines = {line.split("  ")[0]: line for line in done.stdout.decode().splitlines()}
    assert "176 tools: VS Code / Copilot and OpenAI-based clients use at most 128" in lines["mode all"]
    assert lines["mode search"].split()[2] == "5"  # find, call, think.plan, think.next, think.workflows.list
    assert "(search: the rest through gateway.find_tools)" in lines["default (auto)"]
    assert "⚠ 176 tools" in lines["client cursor* (all)"]
    assert lines["native search (7 clients) (all + hints)"][40:].split()[0] == "176"  # every tool, each with a hint
    assert found.returncode == 0, found.stderr.decode()
    first, best, _second = found.stdout.decode().splitlines()
    assert first.startswith("2 of ") and "tools matching 'synthetic catalog entry 042'" in first
    assert first.endswith("ranked by lexical + semantic (wordllama l2_supercat 256d, scores fused):")
    assert best.split()[1] == "k.tool_042"


async def test_check_names_a_bad_exposure_key(tmp_path: Path) -> None:
    path = config_file(tmp_path, "exposure: {mode: sometimes, clients: [{client: x, separator: '/'}]}\n")
    done = cli("check", "--config", str(path))
    assert done.returncode == 1
    problems = done.stderr
    assert "exposure.mode: Input should be 'auto', 'all' or 'search'" in problems
    assert "exposure.clients[0].separator:" in problems


@pytest.mark.parametrize("given", ["0", "-5", "five"])
def test_tools_limit_must_be_a_whole_number_above_0(given: str) -> None:
    done = cli("tools", "--find", "time", "--limit", given)
    assert done.returncode == 2 and f"--limit: {given!r} is not a whole number above 0" in done.stderr


def test_a_log_level_logging_does_not_know_is_refused_with_the_ones_it_does() -> None:
    done = cli("serve", "--log-level", "bogus")
    assert done.returncode == 2
    assert "--log-level: invalid choice: 'BOGUS' (choose from 'DEBUG', 'INFO', 'WARNING', 'ERROR')" in done.stderr
