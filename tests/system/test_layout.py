"""The tests mirror the source tree: `tests/<package>/test_<module>[_<aspect>].py` tests `gateway/<package>/<module>`
(`tests/adapters/` tests `adapters/`; `tests/<package>/test_<package>.py` tests its `__init__`), and a test folder
may mirror one module (`tests/downstreams/relay/`). Only `tests/system/` holds cases of the whole gateway (processes,
deployments, acceptance) that no one module owns."""

from pathlib import Path

from tests.harness import ROOT

APART = frozenset({"system"})


def source_of(root: Path, folder: tuple[str, ...]) -> Path:
    if folder[:1] == ("adapters",):
        return root.joinpath(*folder)
    return root.joinpath("gateway", *folder)


def names_under(package: Path) -> set[str]:
    """The modules and folders below `package`, and the package itself (its `__init__`)."""
    return {p.stem for p in package.rglob("*.py")} | {d.name for d in package.rglob("*") if d.is_dir()} | {package.name}


def unmirrored(root: Path) -> list[str]:
    """Test modules of `root` that name no module of its tree, each with why."""
    problems = []
    for test in sorted((root / "tests").rglob("test_*.py")):
        parts = test.relative_to(root / "tests").parts
        if parts[0] in APART:
            continue
        folder, words = parts[:-1], test.stem.removeprefix("test_").split("_")
        source = source_of(root, folder)
        if source.with_suffix(".py").is_file():
            continue  # a folder of tests for one module
        if not source.is_dir():
            problems.append(f"{test.relative_to(root)}: no {source.relative_to(root)} to mirror")
            continue
        names = names_under(source)
        if not any("_".join(words[:i]) in names for i in range(1, len(words) + 1)):
            problems.append(f"{test.relative_to(root)}: names no module under {source.relative_to(root)}")
    return problems


def test_every_test_module_names_the_module_it_tests() -> None:
    assert unmirrored(ROOT) == []


def test_the_check_finds_tests_that_name_no_module(tmp_path: Path) -> None:
    for path in ["gateway/routing/names.py", "gateway/downstreams/relay.py", "adapters/stdio.py"]:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    for path in [
        "tests/routing/test_names_shortened.py",  # a module and an aspect
        "tests/downstreams/relay/test_anything.py",  # a folder for one module
        "tests/adapters/test_stdio.py",
        "tests/system/test_whole_gateway.py",  # apart
        "tests/routing/test_nothing.py",
        "tests/nowhere/test_names.py",
    ]:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    assert unmirrored(tmp_path) == [
        "tests/nowhere/test_names.py: no gateway/nowhere to mirror",
        "tests/routing/test_nothing.py: names no module under gateway/routing",
    ]
