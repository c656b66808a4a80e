"""The tests mirror the source tree both ways (mitmproxy's `filename_matching`):
`tests/<package>/test_<module>[_<aspect>].py` tests `gateway/<package>/<module>` (`tests/adapters/` tests
`adapters/`; `tests/<package>/test_<package>.py` tests its `__init__`), and a test folder may mirror one module
(`tests/downstreams/relay/`). Every test module names a module, and every module of MIRRORED_LINES or more has a test
module of its own. Only `tests/system/` holds cases of the whole gateway (processes, deployments, acceptance) that
no one module owns.

The tree stays small to read: at most TOP_LEVEL entries in `gateway/` (`ls gateway` answers "where is X"), at most
LONG_MODULES modules over LONG_LINES lines, none over HARD_LINES."""

from pathlib import Path

from tests.harness import ROOT

APART = frozenset({"system"})
MIRRORED_LINES = 150
TOP_LEVEL = 16
LONG_LINES, LONG_MODULES, HARD_LINES = 250, 4, 400

# Modules of MIRRORED_LINES or more still without a test module of their own, each a debt named. An entry that has
# its test module (or shrank) fails the test, so the list only shrinks.
PENDING: dict[str, str] = {}


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


def named_by(test: Path, root: Path) -> Path | None:
    """The source module a test module names: the longest module name its words start with, in the folder it
    mirrors (a package's own name is its `__init__`); a test inside a folder for one module names that module."""
    parts = test.relative_to(root / "tests").parts
    folder, words = parts[:-1], test.stem.removeprefix("test_")
    source = source_of(root, folder)
    if source.with_suffix(".py").is_file():
        return source.with_suffix(".py")
    if not source.is_dir():
        return None
    candidates = {p.stem: p for p in source.glob("*.py") if p.stem != "__init__"}
    candidates |= {d.name: d / "__init__.py" for d in source.iterdir() if (d / "__init__.py").is_file()}
    candidates[source.name] = source / "__init__.py"
    named = [name for name in candidates if words == name or words.startswith(name + "_")]
    return candidates[max(named, key=len)] if named else None


def untested(root: Path, pending: dict[str, str] = PENDING) -> tuple[list[str], list[str]]:
    """Modules of MIRRORED_LINES or more that no test module names, each with its size, and the `pending` entries
    that are no debt any more (the module has its test module, or is gone, or shrank)."""
    tests = (root / "tests").rglob("test_*.py")
    named = {named_by(test, root) for test in tests if test.relative_to(root / "tests").parts[0] not in APART}
    missing, paid = [], []
    for module in sorted([*(root / "gateway").rglob("*.py"), *(root / "adapters").rglob("*.py")]):
        lines = len(module.read_text().splitlines())
        name = str(module.relative_to(root))
        owed = lines >= MIRRORED_LINES and module not in named
        if owed and name not in pending:
            missing.append(f"{name} ({lines} lines) has no test module that names it")
        elif not owed and name in pending:
            paid.append(name)
    paid += sorted(name for name in pending if not (root / name).is_file())
    return missing, paid


def test_every_test_module_names_the_module_it_tests() -> None:
    assert unmirrored(ROOT) == []


def test_every_module_of_150_lines_or_more_has_its_test_module() -> None:
    missing, paid = untested(ROOT)
    assert missing == []
    assert paid == [], "no longer pending: take them off PENDING"


def test_the_top_level_stays_small_and_few_modules_are_long() -> None:
    entries = sorted(p.name for p in (ROOT / "gateway").iterdir() if not p.name.startswith("__"))
    assert len(entries) <= TOP_LEVEL, entries
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in (ROOT / "gateway").rglob("*.py")}
    long = sorted(f"{path} ({lines} lines)" for path, lines in sizes.items() if lines > LONG_LINES)
    assert len(long) <= LONG_MODULES, long
    assert [path for path, lines in sizes.items() if lines > HARD_LINES] == []


def test_the_check_finds_modules_without_their_test_module(tmp_path: Path) -> None:
    big = "x = 1\n" * MIRRORED_LINES
    for path, text in {
        "gateway/pipeline.py": big,
        "gateway/session.py": big,
        "gateway/routing/__init__.py": big,
        "gateway/routing/names.py": big,
        "gateway/routing/names_short.py": big,
        "gateway/downstreams/relay.py": big,
        "gateway/downstreams/pool.py": big,
        "gateway/downstreams/small.py": "x = 1\n",
        "adapters/stdio.py": big,
        "tests/test_pipeline.py": "",
        "tests/routing/test_routing.py": "",  # the package's __init__
        "tests/routing/test_names_short_cut.py": "",  # names_short with an aspect, not names
        "tests/downstreams/relay/test_anything.py": "",
        "tests/system/test_pool.py": "",  # apart: names nothing
        "tests/adapters/test_stdio_lines.py": "",
    }.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    missing, paid = untested(tmp_path, {"gateway/session.py": "owed", "gateway/pipeline.py": "paid", "gone.py": ""})
    assert missing == [
        "gateway/downstreams/pool.py (150 lines) has no test module that names it",
        "gateway/routing/names.py (150 lines) has no test module that names it",
    ]
    assert paid == ["gateway/pipeline.py", "gone.py"]
