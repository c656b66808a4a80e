"""`gateway.app.launcher`: the command a client's entry runs to start this gateway — the one running now, unless it
lives in a cache, whose owner may delete it: then the runner that built it, which builds it again (uv's end to end:
tests/system/test_distribution.py)."""

import sys
from pathlib import Path

import pytest

from gateway.app.launcher import LASTING, in_cache, installed_from, launch

CONFIG = Path("/srv/gateway.yaml")
SERVE = ["serve", "--config", str(CONFIG)]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An environment in a folder tagged as a cache (as uv's is), with no runner named in the environment."""
    (tmp_path / "uv").mkdir()
    (tmp_path / "uv" / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
    prefix = tmp_path / "uv" / "archive-v0" / "env"
    (prefix / "bin").mkdir(parents=True)
    monkeypatch.setattr(sys, "prefix", str(prefix))
    monkeypatch.delenv("UV", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-on-it"))
    return prefix


def test_outside_a_cache_the_entry_runs_this_very_gateway() -> None:
    started = launch(CONFIG)
    assert started.note is None
    assert [started.command, *started.args] in (
        [str(Path(sys.executable).parent / "gateway"), *SERVE],
        [sys.executable, "-m", "gateway", *SERVE],
    )


def test_from_uvs_cache_the_entry_runs_uv_tool_run_from_what_was_installed(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UV", "/opt/uv/bin/uv")
    started = launch(CONFIG)
    uv = ["/opt/uv/bin/uv", "tool", "run", "--from", installed_from(), "gateway"]
    assert [started.command, *started.args] == [*uv, *SERVE]
    assert started.note is not None and f"uv's cache ({cache})" in started.note and LASTING in started.note


def test_from_pipxs_cache_the_entry_runs_pipx_run_with_the_same_spec(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (cache / "pipx_metadata.json").write_text("{}")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "pipx").write_text("#!/bin/sh\n")
    (tmp_path / "bin" / "pipx").chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    started = launch(CONFIG)
    pipx = [str(tmp_path / "bin" / "pipx"), "run", "--spec", installed_from(), "gateway"]
    assert [started.command, *started.args] == [*pipx, *SERVE]
    assert started.note is not None and "14 days" in started.note


def test_from_a_cache_no_runner_is_known_for_the_entry_names_the_folder_and_says_how_to_make_it_last(
    cache: Path,
) -> None:
    started = launch(CONFIG)
    assert started.args[-3:] == SERVE
    assert started.note is not None and str(cache) in started.note and LASTING in started.note


def test_a_cache_is_a_tagged_folder_a_dot_cache_folder_or_the_users_cache_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    (tmp_path / "tagged").mkdir()
    (tmp_path / "tagged" / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
    assert in_cache(tmp_path / "tagged" / "env")
    assert in_cache(tmp_path / "pipx" / ".cache" / "b5bb51c7")
    assert in_cache(tmp_path / "xdg" / "tool" / "env")
    assert not in_cache(tmp_path / "venvs" / "mcp-doorway")
