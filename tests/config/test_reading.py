"""Reading a YAML file a person wrote (the config, a workflow): bounded in size, nesting, aliases and the nodes
they expand to; strict UTF-8; a regular file only; every failure a ConfigError naming the file, line and limit."""

import os
from pathlib import Path

import pytest

from gateway.config import load_config
from gateway.config.reading import BOUNDS
from gateway.errors import ConfigError
from gateway.think.errors import ThinkError
from gateway.think.library import Library
from tests.harness import BOMB_CONFIG, alias_bomb


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
