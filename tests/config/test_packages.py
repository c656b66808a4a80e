"""`package:` and `npm:` servers in the config: the pin each needs, what they exclude, and errors naming the value."""

from pathlib import Path
from typing import Any

import pytest

from gateway.config import StdioServerConfig, load_config, parse_config
from gateway.errors import ConfigError
from tests.harness import ROOT


def problems(servers: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config({"servers": servers}, "g.yaml", Path("/srv"))
    return caught.value.problems


def test_a_pinned_package_is_a_stdio_server_without_transport_or_command() -> None:
    config = parse_config(
        {"servers": {"t": {"package": "mcp-server-time==2026.10.19"}, "e": {"npm": "@scope/srv@1.2.3-rc.1"}}},
        "g.yaml",
        Path("/srv"),
    )
    time, everything = config.servers["t"], config.servers["e"]
    assert isinstance(time, StdioServerConfig) and isinstance(everything, StdioServerConfig)
    assert (time.package, time.command, time.cwd) == ("mcp-server-time==2026.10.19", None, "/srv")
    assert (everything.npm, everything.command) == ("@scope/srv@1.2.3-rc.1", None)


def test_a_command_with_a_package_names_its_program_and_is_not_looked_up_on_path() -> None:
    config = parse_config(
        {"servers": {"j": {"package": "mcp-atlassian[all]==0.23.1", "command": "mcp-atlassian"}}}, "g", Path("/srv")
    )
    server = config.servers["j"]
    assert isinstance(server, StdioServerConfig) and server.command == "mcp-atlassian"


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        pytest.param(
            {"package": "mcp-gitlab"},
            "servers.k.package: 'mcp-gitlab' is not a pinned PyPI requirement; write NAME==VERSION",
            id="unpinned",
        ),
        pytest.param(
            {"package": "mcp-gitlab>=0.21"},
            "servers.k.package: 'mcp-gitlab>=0.21' is not a pinned PyPI requirement",
            id="a-range",
        ),
        pytest.param(
            {"npm": "@scope/srv@^1.2.3"},
            "servers.k.npm: '@scope/srv@^1.2.3' is not a pinned npm package; write NAME@VERSION with an exact",
            id="npm-range",
        ),
        pytest.param(
            {"npm": "@scope/srv@latest"}, "servers.k.npm: '@scope/srv@latest' is not a pinned npm", id="npm-tag"
        ),
        pytest.param(
            {"package": "a==1", "npm": "b@1.0.0"},
            "servers.k: both package ('a==1') and npm ('b@1.0.0') are set; a server is one package",
            id="both",
        ),
        pytest.param(
            {"package": "mcp-gitlab==0.21.2", "command": "../venv/bin/mcp-gitlab"},
            "servers.k: command '../venv/bin/mcp-gitlab' is a path outside the environment the gateway installs "
            "package 'mcp-gitlab==0.21.2' into",
            id="a-path-beside-a-package",
        ),
        pytest.param(
            {"transport": "stdio"},
            "servers.k: no command, package or npm; give the command to run, or a pinned package",
            id="nothing-to-run",
        ),
    ],
)
def test_a_bad_package_entry_is_a_problem_naming_the_value_and_the_expected_form(
    entry: dict[str, Any], expected: str
) -> None:
    found = problems({"k": entry})
    assert len(found) == 1 and found[0].startswith(expected), found


def test_package_on_an_http_server_is_an_unknown_key() -> None:
    found = problems({"k": {"transport": "http", "url": "http://x/mcp", "package": "a==1"}})
    assert found == ["servers.k.package: unknown key"]


@pytest.mark.parametrize("example", ["gitlab-jira.yaml", "team.yaml"])
def test_the_examples_name_their_servers_by_pinned_package_without_paths(
    example: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI_BOT_TOKEN", "x" * 24)  # team.yaml's robot token must be long enough even here
    config = load_config(ROOT / "config" / "examples" / example, unset_ok=True)
    for server in config.servers.values():
        assert isinstance(server, StdioServerConfig) and server.package and server.command is None
