"""A prepared environment checked against the installers' own records: one real install per registry, then each
case damages a copy of it (hard links: made in milliseconds, and a file is replaced, never written through)."""

import json
import os
import shutil
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from gateway.downstreams import installed
from gateway.downstreams.envs import Env

# Real installs: tens of seconds each, minutes on a loaded machine (the suite's 120 s per test is for the rest).
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(400)]

TIME = "mcp-server-time==2026.10.19"
EVERYTHING = "@modelcontextprotocol/server-everything@2026.8.31"
NO_NPM = shutil.which("npm") is None or shutil.which("node") is None


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


async def prepared(kind: str, spec: str, home: Path) -> Path:
    env = Env("t", "pypi" if kind == "pypi" else "npm", spec, None, home)
    await env.prepare()
    return env.root


@pytest.fixture(scope="module")
async def time_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return await prepared("pypi", TIME, tmp_path_factory.mktemp("envs"))


@pytest.fixture(scope="module")
async def everything_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if NO_NPM:
        pytest.skip("npm and node are not on PATH here")
    return await prepared("npm", EVERYTHING, tmp_path_factory.mktemp("envs"))


def copy(root: Path, tmp_path: Path) -> Path:
    target = tmp_path / root.name
    shutil.copytree(root, target, symlinks=True, copy_function=os.link)
    return target


def replace(path: Path, data: bytes) -> None:
    """Write `path` anew: the copy's file is a hard link to the prepared one, which must stay as it is."""
    path.unlink()
    path.write_bytes(data)


def site_packages(root: Path) -> Path:
    return next(root.glob("lib/python*/site-packages"))


def check_time(root: Path) -> installed.Checked:
    return installed.pypi(root, Requirement(TIME))


async def test_an_intact_environment_has_no_problems_and_declares_the_programs_its_records_list(
    time_root: Path, tmp_path: Path
) -> None:
    checked = check_time(copy(time_root, tmp_path))
    assert checked.problems == []
    assert checked.count > 1000  # every distribution reached from the pin, not the pinned one alone
    assert "mcp-server-time" in checked.programs
    assert not {"python", "python3", "activate"} & set(checked.programs)  # the venv's own, in no RECORD


async def test_a_deleted_program_is_a_missing_file_of_the_distribution_that_declares_it(
    time_root: Path, tmp_path: Path
) -> None:
    root = copy(time_root, tmp_path)
    (root / "bin" / "mcp-server-time").unlink()
    checked = check_time(root)
    assert checked.problems == ["mcp-server-time 2026.10.19: files missing (bin/mcp-server-time)"]
    assert "mcp-server-time" in checked.programs  # still declared: a missing program is damage, not a wrong name


async def test_deleted_package_files_are_counted_with_an_example(time_root: Path, tmp_path: Path) -> None:
    root = copy(time_root, tmp_path)
    shutil.rmtree(site_packages(root) / "mcp_server_time")
    [problem] = check_time(root).problems
    assert problem.startswith("mcp-server-time 2026.10.19: files missing (")
    assert " files, e.g. lib/python" in problem and "/site-packages/mcp_server_time/" in problem


async def test_a_file_cut_short_is_found_by_its_recorded_size(time_root: Path, tmp_path: Path) -> None:
    root = copy(time_root, tmp_path)
    server = site_packages(root) / "mcp_server_time" / "server.py"
    replace(server, server.read_bytes()[:100])
    assert check_time(root).problems == [
        f"mcp-server-time 2026.10.19: files not at the size its RECORD says ({server.relative_to(root)})"
    ]


async def test_a_dependency_removed_with_its_metadata_is_found_through_the_requirements(
    time_root: Path, tmp_path: Path
) -> None:
    """The dependency's own RECORD went with it: only its dependant's Requires-Dist still says it belongs."""
    root = copy(time_root, tmp_path)
    site = site_packages(root)
    for gone in [site / "tzlocal", *site.glob("tzlocal-*.dist-info")]:
        shutil.rmtree(gone)
    assert check_time(root).problems == ["tzlocal (required by mcp-server-time 2026.10.19) is not installed"]


async def test_the_pinned_distribution_removed_with_its_metadata_is_named_as_the_pin(
    time_root: Path, tmp_path: Path
) -> None:
    root = copy(time_root, tmp_path)
    site = site_packages(root)
    for gone in [site / "mcp_server_time", *site.glob("mcp_server_time-*.dist-info")]:
        shutil.rmtree(gone)
    assert check_time(root).problems == ["mcp-server-time (the pin) is not installed"]


async def test_a_dependency_at_a_version_its_dependant_refuses_is_named_with_both(
    time_root: Path, tmp_path: Path
) -> None:
    root = copy(time_root, tmp_path)
    [info] = site_packages(root).glob("tzdata-*.dist-info")
    metadata = info / "METADATA"
    text = metadata.read_text()
    version = next(line for line in text.splitlines() if line.startswith("Version: "))
    replace(metadata, text.replace(version, "Version: 2000.1").encode())
    problems = check_time(root).problems
    assert "tzdata 2000.1 is installed; mcp-server-time 2026.10.19 needs >=2024.2" in problems, problems


async def test_compiled_files_are_a_cache_not_a_part_to_check(time_root: Path, tmp_path: Path) -> None:
    root = copy(time_root, tmp_path)
    caches = list(root.rglob("__pycache__"))
    assert caches
    for cache in caches:
        shutil.rmtree(cache)
    assert check_time(root).problems == []


async def test_site_packages_gone_is_one_problem(time_root: Path, tmp_path: Path) -> None:
    root = copy(time_root, tmp_path)
    shutil.rmtree(site_packages(root))
    assert check_time(root).problems == ["lib/python*/site-packages is missing"]


def check_everything(root: Path) -> installed.Checked:
    return installed.npm(root, "@modelcontextprotocol/server-everything", "2026.8.31")


async def test_an_intact_npm_folder_has_no_problems_and_declares_its_bins(
    everything_root: Path, tmp_path: Path
) -> None:
    checked = check_everything(copy(everything_root, tmp_path))
    assert (checked.problems, checked.programs) == ([], ["mcp-server-everything"])
    assert checked.count > 50  # every package npm's hidden lockfile lists


async def test_an_npm_bin_whose_file_is_gone_is_named(everything_root: Path, tmp_path: Path) -> None:
    root = copy(everything_root, tmp_path)
    (root / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js").unlink()
    assert check_everything(root).problems == [
        "node_modules/.bin/mcp-server-everything is missing or points at nothing"
    ]


async def test_an_npm_package_removed_or_at_another_version_is_counted(everything_root: Path, tmp_path: Path) -> None:
    root = copy(everything_root, tmp_path)
    modules = root / "node_modules"
    shutil.rmtree(modules / "zod")
    express = modules / "express" / "package.json"
    replace(express, json.dumps({**json.loads(express.read_text()), "version": "0.0.1"}).encode())
    [problem] = check_everything(root).problems
    assert (
        problem.startswith("2 of the ")
        and "packages npm installed beside it are missing or at another version" in problem
    )


async def test_the_pinned_npm_package_at_another_version_is_named(everything_root: Path, tmp_path: Path) -> None:
    root = copy(everything_root, tmp_path)
    manifest = root / "node_modules" / "@modelcontextprotocol" / "server-everything" / "package.json"
    replace(manifest, json.dumps({**json.loads(manifest.read_text()), "version": "1.0.0"}).encode())
    assert check_everything(root).problems == [
        "@modelcontextprotocol/server-everything is at '1.0.0', not the pinned 2026.8.31"
    ]


async def test_a_folder_moved_from_where_it_was_installed_is_broken_its_programs_start_a_python_not_there(
    time_root: Path, tmp_path: Path
) -> None:
    moved = tmp_path / time_root.name
    os.rename(time_root, moved)  # a real move (and back): the scripts pip wrote still name the old folder's python
    try:
        problems = check_time(moved).problems
    finally:
        os.rename(moved, time_root)
    assert len(problems) == 1 and problems[0].startswith("bin/"), problems
    assert problems[0].endswith(f" starts {time_root / 'bin' / 'python'}, which is not there (was the folder moved?)")
