"""Config loading: `${VAR}` expansion, problems that name the key path, paths relative to the config file."""

from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.config import GatewayConfig, HttpServerConfig, StdioServerConfig, load_config
from gateway.errors import ConfigError


def load(tmp_path: Path, data: dict[str, Any]) -> GatewayConfig:
    path = tmp_path / "gateway.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return load_config(path)


def problems(tmp_path: Path, data: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, data)
    assert info.value.source == str(tmp_path / "gateway.yaml")
    return info.value.problems


def stdio(**fields: Any) -> dict[str, Any]:
    return {"transport": "stdio", "command": "python3", **fields}


def test_env_vars_expand_inside_strings_anywhere_in_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GW_TEST_TOKEN", "s3cret")
    monkeypatch.setenv("GW_TEST_ARG", "--verbose")
    config = load(
        tmp_path,
        {
            "servers": {
                "api": {
                    "transport": "http",
                    "url": "http://127.0.0.1:1/mcp",
                    "headers": {"Authorization": "Bearer ${GW_TEST_TOKEN}"},
                },
                "k": stdio(args=["${GW_TEST_ARG}", "plain"], env={"TOKEN": "${GW_TEST_TOKEN}"}),
            }
        },
    )
    api, k = config.servers["api"], config.servers["k"]
    assert isinstance(api, HttpServerConfig) and api.headers == {"Authorization": "Bearer s3cret"}
    assert isinstance(k, StdioServerConfig) and k.args == ["--verbose", "plain"] and k.env == {"TOKEN": "s3cret"}


def test_unset_env_var_is_a_problem_naming_the_key_path_and_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GW_TEST_UNSET", raising=False)
    found = problems(tmp_path, {"servers": {"k": stdio(env={"TOKEN": "${GW_TEST_UNSET}"}, args=["${GW_TEST_UNSET}"])}})
    assert found == [
        "servers.k.args[0]: environment variable GW_TEST_UNSET is not set",
        "servers.k.env.TOKEN: environment variable GW_TEST_UNSET is not set",
    ]


def test_unknown_key_is_a_problem_naming_its_key_path(tmp_path: Path) -> None:
    assert problems(tmp_path, {"servers": {"k": stdio(timout_s=5)}}) == ["servers.k.timout_s: unknown key"]
    assert problems(tmp_path, {"namespace": {"seperator": "_"}}) == ["namespace.seperator: unknown key"]
    assert problems(tmp_path, {"srevers": {}}) == ["srevers: unknown key"]


def test_server_named_like_a_transport_keeps_its_name_in_the_key_path(tmp_path: Path) -> None:
    # Pydantic reports `servers.http.stdio.comand`; only the discriminator tag may be dropped.
    assert problems(tmp_path, {"servers": {"http": stdio(comand="x")}}) == ["servers.http.comand: unknown key"]


def test_every_problem_is_reported_not_just_the_first(tmp_path: Path) -> None:
    found = problems(tmp_path, {"servers": {"a": stdio(bogus=1), "b": {"transport": "stdio"}}, "limits": {"x": 1}})
    assert sorted(found)[:2] == ["limits.x: unknown key", "servers.a.bogus: unknown key"]
    assert sorted(found)[2].startswith("servers.b: no command, package or npm; give the command to run")
    assert len(found) == 3


def test_relative_cwd_and_relative_command_resolve_against_the_config_folder(tmp_path: Path) -> None:
    folder = tmp_path / "conf"
    folder.mkdir()
    config = load(folder, {"servers": {"k": {"transport": "stdio", "command": "./bin/server", "cwd": "work"}}})
    k = config.servers["k"]
    base = folder.resolve()
    assert isinstance(k, StdioServerConfig)
    assert k.command == str(base / "bin" / "server")
    assert k.cwd == str(base / "work")


def test_cwd_defaults_to_the_config_folder_and_bare_or_absolute_commands_stay(tmp_path: Path) -> None:
    config = load(tmp_path, {"servers": {"a": stdio(), "b": {"transport": "stdio", "command": "/usr/bin/env"}}})
    a, b = config.servers["a"], config.servers["b"]
    assert isinstance(a, StdioServerConfig) and isinstance(b, StdioServerConfig)
    assert a.command == "python3"  # looked up on PATH by the child, not next to the config
    assert b.command == "/usr/bin/env"
    assert a.cwd == str(tmp_path.resolve())


def test_unknown_transport_names_the_transport_key_and_the_choices(tmp_path: Path) -> None:
    found = problems(tmp_path, {"servers": {"k": {"transport": "websocket", "url": "ws://x"}}})
    assert found == ["servers.k.transport: unknown transport 'websocket'; expected one of stdio, http, sse"]
    missing = problems(tmp_path, {"servers": {"k": {"command": "python3"}}})
    assert missing == ["servers.k.transport: missing; expected one of stdio, http, sse"]


def test_namespace_gateway_is_reserved(tmp_path: Path) -> None:
    found = problems(tmp_path, {"servers": {"gateway": stdio()}})
    assert found == ["servers.gateway: namespace 'gateway' is reserved for the gateway's own tools"]


def test_namespace_must_be_a_short_plain_name(tmp_path: Path) -> None:
    found = problems(tmp_path, {"servers": {"has space": stdio()}})
    assert found == ["servers.has space: namespace 'has space' must be 1-32 letters, digits, '_' or '-'"]


def test_wrong_types_name_the_key_path(tmp_path: Path) -> None:
    found = problems(tmp_path, {"servers": {"k": stdio(args=["ok", 3], timeout_s="soon")}})
    assert sorted(found) == [
        "servers.k.args[1]: Input should be a valid string",
        "servers.k.timeout_s: Input should be a valid number, unable to parse string as a number",
    ]


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "gateway.yaml"
    path.write_text("servers:\n  k: {transport: stdio\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    [problem] = info.value.problems
    assert problem.startswith("line ") and "not valid YAML" in problem


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "absent.yaml")
    assert info.value.problems == ["(file): cannot read: No such file or directory"]


def test_empty_file_is_an_empty_config(tmp_path: Path) -> None:
    path = tmp_path / "gateway.yaml"
    path.write_text("", encoding="utf-8")
    assert load_config(path).servers == {}


def test_a_servers_roots_are_absolute_folders_or_file_uris(tmp_path: Path) -> None:
    roots = ["/srv/shared", "file:///srv/other", "~/notes"]
    loaded = load(tmp_path, {"servers": {"fs": stdio(roots=roots)}}).servers["fs"]
    assert loaded.roots == ["file:///srv/shared", "file:///srv/other", Path("~/notes").expanduser().as_uri()]
    found = problems(tmp_path, {"servers": {"fs": stdio(roots=["notes"])}})
    assert found == ["servers.fs.roots[0]: root 'notes' is not absolute; write an absolute path or a file:// URI"]
