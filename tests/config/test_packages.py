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
            "servers.k.package: 'mcp-gitlab' is not a pinned PyPI requirement: no version given; write NAME==VERSION",
            id="unpinned",
        ),
        pytest.param(
            {"package": "mcp-gitlab>=0.21"},
            "servers.k.package: 'mcp-gitlab>=0.21' is not a pinned PyPI requirement: >=0.21 is not one exact version",
            id="a-range",
        ),
        pytest.param(
            {"npm": "@scope/srv@^1.2.3"},
            "servers.k.npm: '@scope/srv@^1.2.3' is not a pinned npm package: '^1.2.3' is a range; write NAME@VERSION",
            id="npm-range",
        ),
        pytest.param(
            {"npm": "@scope/srv@latest"},
            "servers.k.npm: '@scope/srv@latest' is not a pinned npm package: 'latest' is a dist-tag, which moves",
            id="npm-tag",
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


# Each is refused when the config is read, so nothing (pip, npm, a shell) ever sees it.
@pytest.mark.parametrize(
    ("key", "spec", "why"),
    [
        ("package", "name[a\n-e .]==1.0", "is not a PEP 508 requirement (Expected matching RIGHT_BRACKET"),
        ("package", "-e .", "is not a PEP 508 requirement (Expected package name at the start"),
        ("package", "--index-url=http://evil/ a==1", "is not a PEP 508 requirement (Expected package name"),
        ("package", "a==1.0 --extra-index-url http://evil/", "is not a PEP 508 requirement (Expected comma"),
        ("package", "a==1.0\x00", "is not a PEP 508 requirement"),
        ("package", "a @ https://evil/a-1.0-py3-none-any.whl", "a direct URL (NAME @ URL) installs whatever"),
        ("package", "a @ file:///etc/passwd", "a direct URL"),
        ("package", "a==1.0; python_version < '3'", 'an environment marker (; python_version < "3") may leave'),
        ("package", "a==1.*", "==1.* is not one exact version"),
        ("package", "a===anything", "===anything is not one exact version"),
        ("package", "a==1.0,!=1.1", "is not one exact version"),
        ("npm", "-e@1.0.0", "its name '-e' starts with a hyphen"),
        ("npm", "../x@1.0.0", "its name '../x' starts with a period; may hold only URL-friendly characters"),
        ("npm", "@s/.x@1.0.0", "its name '@s/.x' starts with a period after its scope"),
        ("npm", "@a/b/c@1.0.0", "may hold only URL-friendly characters"),
        ("npm", "x y@1.0.0", "may hold only URL-friendly characters"),
        ("npm", "node_modules@1.0.0", "its name 'node_modules' is reserved"),
        ("npm", "_x@1.0.0", "starts with an underscore"),
        ("npm", "x@1.0.0 --registry=http://evil/", "'1.0.0 --registry=http://evil/' holds spaces or control"),
        ("npm", "x@\n1.0.0", "holds spaces or control characters"),
        ("npm", "x@github:evil/x", "'github:evil/x' is a git, file or URL spec"),
        ("npm", "x@file:../y", "is a git, file or URL spec"),
        ("npm", "x@https://evil/x.tgz", "is a git, file or URL spec"),
        ("npm", "x@1.2", "'1.2' is a range"),
        ("npm", "x@1.x", "'1.x' is a range"),
        ("npm", "x@*", "'*' is a range"),
        ("npm", "x@>=1.0.0", "is a range"),
        ("npm", "x@1.0.0 || 2.0.0", "is a range"),
        ("npm", "x@01.2.3", "'01.2.3' is not a semver version (X.Y.Z, no leading zeros"),
        ("npm", "x@1.2.3-", "is not a semver version"),
        ("npm", "x@1.2.3-a..b", "is not a semver version"),
        ("npm", "x@v1.2.3", "'v1.2.3': write the version without its leading 'v'"),
        ("npm", "x@" + "1" * 300 + ".0.0", "its version is 304 characters, more than npm's 256"),
        ("npm", "@scope/srv", "no version given"),
    ],
)
def test_a_spec_outside_its_registry_s_grammar_or_not_one_exact_version_is_refused_naming_why(
    key: str, spec: str, why: str
) -> None:
    found = problems({"k": {key: spec}})
    assert len(found) == 1 and found[0].startswith(f"servers.k.{key}: {spec!r} is not ") and why in found[0], found


@pytest.mark.parametrize(
    ("key", "spec"),
    [
        ("package", "mcp-atlassian[all]==0.23.1"),
        ("package", "a[ x , y ]==1.0+local.7"),
        ("package", "Zope.Interface==5.0.post1"),
        ("npm", "JSONStream@1.3.5"),  # capitals: no longer allowed for new packages, still installable
        ("npm", "crazy!@1.0.0"),
        ("npm", "@scope/srv@1.2.3-rc.1+build.5"),
        ("npm", "http@0.0.1-security"),  # a core module's name: an old package's
    ],
)
def test_what_the_registries_install_by_exact_version_is_accepted(key: str, spec: str) -> None:
    server = parse_config({"servers": {"k": {key: spec}}}, "g.yaml", Path("/srv")).servers["k"]
    assert isinstance(server, StdioServerConfig) and getattr(server, key) == spec


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
