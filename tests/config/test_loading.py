"""Config loading: `${VAR}` expansion, problems that name the key path, paths relative to the config file."""

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.config import GatewayConfig, HttpServerConfig, StdioServerConfig, load_config
from gateway.config.reading import BOUNDS
from gateway.errors import ConfigError
from gateway.think.errors import ThinkError
from gateway.think.library import Library
from tests.harness import BOMB_CONFIG, alias_bomb


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
    assert sorted(found) == [
        "limits.x: unknown key",
        "servers.a.bogus: unknown key",
        "servers.b.command: Field required",
    ]


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


def refusal(tmp_path: Path, data: str | bytes) -> str:
    path = tmp_path / "gateway.yaml"
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    with pytest.raises(ConfigError) as info:
        load_config(path)
    [problem] = info.value.problems
    assert str(info.value).startswith(f"{path}: ")
    return problem


def test_yaml_is_bounded_before_anything_is_built_from_it(tmp_path: Path) -> None:
    assert len(alias_bomb().encode()) == 339
    assert refusal(tmp_path, BOMB_CONFIG) == (
        "line 12: 101,253 nodes by here (values, lists, mappings; an alias counts as all it stands for), "
        "over the limit of 100,000; is it the right file? Nested aliases multiply"
    )
    many = "servers: {}\nx-anchor: &v 1\nx-list: [" + ", ".join(["*v"] * (BOUNDS.max_aliases + 1)) + "]\n"
    assert refusal(tmp_path, many) == "line 3: more than 100 aliases (*name), over the limit; write the values out"
    deep = "servers: " + "[" * 1000 + "]" * 1000 + "\n"  # RecursionError in the composer, unbounded
    assert (
        refusal(tmp_path, deep)
        == "line 1: nested more than 64 levels deep (aliases expanded), over the limit; flatten it"
    )
    # Forty aliases, each forty levels below the last: few nodes, but 1,600 levels for every walk after the parse.
    stairs = "a0: &a0 1\n" + "".join(f"a{k}: &a{k} {'[' * 40}*a{k - 1}{']' * 40}\n" for k in range(1, 40))
    assert refusal(tmp_path, stairs).startswith("line 3: nested more than 64 levels deep (aliases expanded)")
    assert refusal(tmp_path, "servers: &s {k: *s}\n") == "line 1: alias *s is inside the node it names (a cycle)"
    big = "servers: {}\n" + "# padding\n" * (BOUNDS.max_bytes // 10)
    assert refusal(tmp_path, big) == f"(file): {len(big):,} bytes, over the limit of 1,048,576; is it the right file?"


def test_bytes_and_values_no_config_can_hold_are_problems_naming_the_line(tmp_path: Path) -> None:
    valid = b"servers: {}\n"
    assert refusal(tmp_path, valid + b"# caf\xe9\n") == "line 2: byte 17 is 0xe9, not UTF-8; save the file as UTF-8"
    assert refusal(tmp_path, valid.decode().encode("utf-16")) == (
        "line 1: byte 0 is 0xff, not UTF-8 (it looks like UTF-16); save the file as UTF-8"
    )
    assert refusal(tmp_path, valid + b"x: a\x00b\n") == "line 2: special characters are not allowed: U+0000; remove it"
    assert refusal(tmp_path, valid + b"limits: {max_inline_bytes: " + b"9" * 5000 + b"}\n").startswith(
        "line 2: a value the gateway cannot read: Exceeds the limit (4300 digits) for integer string conversion"
    )
    assert refusal(tmp_path, valid + b"x: 2024-13-45\n") == (
        "line 2: a value the gateway cannot read: month must be in 1..12"
    )
    no_path = b'servers: {k: {transport: stdio, command: python3, cwd: "a\\0b"}}\n'
    assert refusal(tmp_path, no_path) == "(paths): a path the system cannot take: embedded null byte"


def test_what_is_not_a_config_file_is_refused_without_reading_it_whole_or_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)  # opened for reading, it would wait for a writer for good
    for path, problem in [
        (fifo, "(file): not a regular file (a FIFO, socket or device); name a YAML file"),
        (Path("/dev/zero"), "(file): not a regular file (a FIFO, socket or device); name a YAML file"),
        (tmp_path, "(file): cannot read: Is a directory"),
    ]:
        with pytest.raises(ConfigError) as info:
            load_config(path)
        assert info.value.problems == [problem]


def test_workflow_files_are_read_within_the_same_bounds_and_a_bad_one_is_listed_as_invalid(tmp_path: Path) -> None:
    (tmp_path / "bomb_v1.yaml").write_text("name: bomb_v1\nx:\n" + alias_bomb(2), encoding="utf-8")
    (tmp_path / "latin_v1.yaml").write_bytes(b"# caf\xe9\nname: latin_v1\n")
    library = Library([tmp_path])
    good, bad = library.all()  # the Latin-1 file raised UnicodeDecodeError out of the listing (and `gateway check`)
    assert good == [] and [e.error_code for e in bad] == ["YAML_SCHEMA_VIOLATION"] * 2
    assert [e.details for e in bad] == [
        [
            f"{tmp_path / 'bomb_v1.yaml'}: line 7: 101,243 nodes by here (values, lists, mappings; an alias counts as "
            "all it stands for), over the limit of 100,000; is it the right file? Nested aliases multiply"
        ],
        [f"{tmp_path / 'latin_v1.yaml'}: line 1: byte 5 is 0xe9, not UTF-8; save the file as UTF-8"],
    ]
    with pytest.raises(ThinkError) as info:
        library.raw("latin_v1")  # think.workflow.read
    assert info.value.details == bad[1].details
