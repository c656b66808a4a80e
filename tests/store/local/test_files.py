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
