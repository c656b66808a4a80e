"""The one writer of whole files: a failure part-way leaves the target as it was and no temporary file."""

import stat
from pathlib import Path

import pytest

from gateway.store.local.files import write_whole


def test_a_rename_that_fails_leaves_the_target_and_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "record"
    target.mkdir()  # a folder in the way: the temporary file is written, the rename over it fails
    (target / "inside").write_text("kept")
    with pytest.raises(IsADirectoryError):
        write_whole(target, b"new")
    assert (target / "inside").read_text() == "kept" and sorted(p.name for p in tmp_path.iterdir()) == ["record"]


def test_the_mode_is_private_unless_given(tmp_path: Path) -> None:
    write_whole(tmp_path / "private.json", b"{}")
    write_whole(tmp_path / "shared.json", b"{}", mode=0o644)
    assert stat.S_IMODE((tmp_path / "private.json").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "shared.json").stat().st_mode) == 0o644
    assert (tmp_path / "shared.json").read_bytes() == b"{}"


def test_a_check_that_refuses_just_before_the_rename_leaves_the_target(tmp_path: Path) -> None:
    target = tmp_path / "mcp.json"
    target.write_bytes(b"theirs")

    def changed_meanwhile() -> None:
        assert sorted(p.name for p in tmp_path.iterdir())[0].startswith(".mcp.")  # the new data is on disk by now
        raise PermissionError("changed meanwhile")

    with pytest.raises(PermissionError):
        write_whole(target, b"ours", check=changed_meanwhile)
    assert target.read_bytes() == b"theirs" and [p.name for p in tmp_path.iterdir()] == ["mcp.json"]
