"""A user's file is written whole, as the user had it (owner, mode, byte-order mark), and never over a change
another program made while it was being edited."""

import os
from pathlib import Path

import pytest

from gateway.app import userfile


def test_a_change_made_by_another_program_meanwhile_is_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"theme": "light"}', encoding="utf-8")
    file = userfile.read(path)
    path.write_text('{"theme": "dark", "fontSize": 14}', encoding="utf-8")  # the client saves its settings
    with pytest.raises(userfile.FileRefused, match="was changed by another program while this edited it"):
        userfile.write(file, '{"theme": "light", "mcpServers": {}}')
    assert path.read_text(encoding="utf-8") == '{"theme": "dark", "fontSize": 14}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["settings.json"]


def test_a_file_created_meanwhile_is_not_overwritten_either(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    file = userfile.read(path)
    path.write_text("{}", encoding="utf-8")
    with pytest.raises(userfile.FileRefused, match="was changed by another program"):
        userfile.write(file, '{"mcpServers": {}}')
    assert path.read_text(encoding="utf-8") == "{}"


def test_root_editing_a_users_file_leaves_it_theirs_with_its_mode_and_bom(tmp_path: Path) -> None:
    """`sudo gateway connect ... --write` on a user's file: a file that became root's would no longer be theirs
    to edit."""
    if os.geteuid() != 0:
        pytest.skip("only root can make a file another user's")
    path = tmp_path / "mcp.json"
    path.write_bytes(b"\xef\xbb\xbf{}")
    os.chown(path, 65534, 65534)
    path.chmod(0o604)
    userfile.write(userfile.read(path), '{"mcpServers": {}}')
    st = path.stat()
    assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (65534, 65534, 0o604)
    assert path.read_bytes() == b'\xef\xbb\xbf{"mcpServers": {}}'
