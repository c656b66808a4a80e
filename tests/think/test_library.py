"""The workflow library's listing: read again only when a folder changed, and never stale within a coarse tick."""

import os
import time
from pathlib import Path
from unittest.mock import patch

from gateway.think.library import SETTLE_NS, Library

FLOW = "name: {name}\nsteps: []\n"


def settle(folder: Path) -> int:
    """Date the folder's last change back past the settle time, as a folder nobody touched for a while; its stamp."""
    past = time.time_ns() - 2 * SETTLE_NS
    os.utime(folder, ns=(past, past))
    return past


def test_an_unchanged_folder_is_listed_once_and_a_change_is_seen_at_once(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(FLOW.format(name="a"))
    library = Library([tmp_path, tmp_path / "missing"])
    settle(tmp_path)
    with patch.object(Path, "glob", autospec=True, side_effect=Path.glob) as globbed:
        assert library.names() == ["a"]
        listed = globbed.call_count
        for _ in range(5):
            assert library.names() == ["a"]
        assert globbed.call_count == listed  # every call of a session over auto's budget asks
    (tmp_path / "b.yaml").write_text(FLOW.format(name="b"))  # the folder's modification time moves
    assert library.names() == ["a", "b"]
    (tmp_path / "a.yaml").unlink()
    assert library.names() == ["b"]
    (tmp_path / "missing").mkdir()
    (tmp_path / "missing" / "c.yml").write_text(FLOW.format(name="c"))
    assert library.names() == ["b", "c"]


def test_a_file_added_in_the_same_tick_as_the_last_listing_is_not_missed(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(FLOW.format(name="a"))
    library = Library([tmp_path])
    assert library.names() == ["a"]  # the folder changed just now: this listing is not kept
    stamp = tmp_path.stat().st_mtime_ns
    (tmp_path / "b.yaml").write_text(FLOW.format(name="b"))
    os.utime(tmp_path, ns=(stamp, stamp))  # a coarse clock gave the second change the first one's time
    assert library.names() == ["a", "b"]
