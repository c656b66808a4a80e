"""Imports run one way: `app → fronts → middleware → routing → downstreams → adapters → mcp`, with `think` and
`hosted` beside `downstreams`, and the leaves (`pipeline`, `session`, `sdk`, `errors`, `results`, `inflight`,
`telemetry`, `config`, `store`) importing no stage (DESIGN.md §3). Every import counts, at module level, in a
function or under `TYPE_CHECKING`: a dependency hidden in a function body is still a dependency. No module may reach
itself again through its imports (a circle), and no room may import a room above it or one that imports it back."""

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.harness import ROOT

# Each room's depth on the request path; a module imports only rooms at its depth or deeper. Rooms at one depth
# (`downstreams`, `think`, `hosted`; the leaves among themselves) may import one another, but not both ways.
DEPTH = {
    "app": 0,
    "fronts": 1,
    "middleware": 2,
    "routing": 3,
    "downstreams": 4,
    "think": 4,
    "hosted": 4,
    "adapters": 5,
    **dict.fromkeys(["pipeline", "session", "sdk", "errors", "results", "inflight", "telemetry", "config", "store"], 6),
}
# `gateway/__init__.py` holds the version; `python -m gateway` is the command line's door.
OUTSIDE_ROOMS = {"gateway": 6, "gateway.__main__": 0}

# Known debts: arrows that run against the design, each named with why it is still here and what pays it off.
# An entry that no longer matches an import fails the test, so the list only shrinks.
ALLOWED: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Arrow:
    """`source` imports `target` at `path:line` (both dotted module names of the tree)."""

    source: str
    target: str
    path: str
    line: int


def modules_of(root: Path) -> dict[str, Path]:
    """Every module of `gateway/` and `adapters/` by its dotted name (a package by its own name)."""
    found = {}
    for top in ("gateway", "adapters"):
        for path in sorted((root / top).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def room_of(module: str) -> str:
    if module in OUTSIDE_ROOMS:
        return module
    parts = module.split(".")
    return parts[0] if parts[0] == "adapters" else parts[1]


def depth_of(module: str) -> int:
    return OUTSIDE_ROOMS.get(module, DEPTH.get(room_of(module), -1))


def imported(tree: ast.AST, modules: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """The tree's modules that `tree` imports, each with its line: `from a.b import c` is `a.b.c` when that is a
    module, else `a.b`; a name outside the tree (`mcp`, `anyio`) is no arrow."""

    def within(name: str) -> str:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [within(alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [
                f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules else within(node.module)
                for alias in node.names
            ]
        else:
            continue
        yield from ((name, node.lineno) for name in names if name)


def arrows_of(root: Path) -> tuple[dict[str, Path], list[Arrow]]:
    modules = modules_of(root)
    arrows = []
    for source, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        seen = set()
        for target, line in imported(tree, modules):
            if target != source and target not in seen:
                seen.add(target)
                arrows.append(Arrow(source, target, str(path.relative_to(root)), line))
    return modules, arrows


def circles(nodes: list[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of more than one node (Tarjan's algorithm, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                part = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    part.append(member)
                    if member == node:
                        break
                if len(part) > 1:
                    found.append(sorted(part))
    return sorted(found)


@dataclass
class ImportMap:
    modules: int
    arrows: int
    upward: list[str]
    circles: list[str]
    stale: list[str]


def import_map(root: Path, allowed: dict[tuple[str, str], str] = ALLOWED) -> ImportMap:
    """The tree's import arrows, with every arrow that runs back up and every circle (of modules, and of rooms)
    written as `path:line: source → target (rooms)`; `stale` lists allowances that match no import any more."""
    modules, arrows = arrows_of(root)
    upward, used = [], set()
    for arrow in arrows:
        if depth_of(arrow.target) >= depth_of(arrow.source):
            continue
        if (arrow.source, arrow.target) in allowed:
            used.add((arrow.source, arrow.target))
            continue
        source_room, target_room = room_of(arrow.source), room_of(arrow.target)
        upward.append(
            f"{arrow.path}:{arrow.line}: {arrow.source} → {arrow.target} runs back up ({source_room} → {target_room})"
        )
    by_module: dict[str, set[str]] = {}
    by_room: dict[str, set[str]] = {}
    module_line: dict[tuple[str, str], str] = {}
    room_line: dict[tuple[str, str], str] = {}
    for arrow in arrows:
        by_module.setdefault(arrow.source, set()).add(arrow.target)
        module_line[arrow.source, arrow.target] = f"{arrow.path}:{arrow.line}"
        source_room, target_room = room_of(arrow.source), room_of(arrow.target)
        if source_room != target_room and depth_of(arrow.target) == depth_of(arrow.source):
            by_room.setdefault(source_room, set()).add(target_room)
            room_line.setdefault((source_room, target_room), f"{arrow.path}:{arrow.line}")
    found = []
    for edges, line in ((by_module, module_line), (by_room, room_line)):
        for part in circles(sorted(edges), edges):
            steps = [f"{line[a, b]}: {a} → {b}" for a in part for b in sorted(edges[a] & set(part))]
            found.append("circle of " + ", ".join(part) + ": " + "; ".join(steps))
    stale = [f"{a} → {b}" for a, b in allowed if (a, b) not in used]
    return ImportMap(len(modules), len(arrows), sorted(upward), found, stale)


def test_no_import_runs_back_up_or_in_a_circle() -> None:
    found = import_map(ROOT)
    assert found.upward == []
    assert found.circles == []
    assert found.stale == []


def write(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)


def test_the_check_finds_an_import_running_back_up_and_a_circle(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "gateway/__init__.py": "",
            "gateway/errors.py": "",
            "gateway/pipeline.py": "import gateway.errors\n\n\ndef later():\n    from gateway.downstreams import peer\n",  # noqa: E501
            "gateway/downstreams/__init__.py": "",
            "gateway/downstreams/peer.py": "from adapters.stdio import Pipe\nfrom gateway import errors\n",
            "gateway/routing/__init__.py": "",
            "gateway/routing/a.py": "from gateway.routing.b import thing\n",
            "gateway/routing/b.py": "def thing():\n    import gateway.routing.a\n",
            "gateway/think/__init__.py": "",
            "gateway/think/x.py": "from gateway.hosted import y\n",
            "gateway/hosted/__init__.py": "",
            "gateway/hosted/y.py": "import typing\nif typing.TYPE_CHECKING:\n    from gateway.think.x import z\n",
            "adapters/__init__.py": "",
            "adapters/stdio.py": "from gateway.fronts import stdio\n",
            "gateway/fronts/__init__.py": "",
            "gateway/fronts/stdio.py": "import mcp\n",
        },
    )
    found = import_map(tmp_path, {("gateway.errors", "gateway.app"): "a debt long paid"})
    assert found.upward == [
        "adapters/stdio.py:1: adapters.stdio → gateway.fronts.stdio runs back up (adapters → fronts)",
        "gateway/pipeline.py:5: gateway.pipeline → gateway.downstreams.peer runs back up (pipeline → downstreams)",
    ]
    assert found.circles == [
        "circle of gateway.hosted.y, gateway.think.x: gateway/hosted/y.py:3: gateway.hosted.y → gateway.think.x; "
        "gateway/think/x.py:1: gateway.think.x → gateway.hosted.y",
        "circle of gateway.routing.a, gateway.routing.b: "
        "gateway/routing/a.py:1: gateway.routing.a → gateway.routing.b; "
        "gateway/routing/b.py:2: gateway.routing.b → gateway.routing.a",
        "circle of hosted, think: gateway/hosted/y.py:3: hosted → think; gateway/think/x.py:1: think → hosted",
    ]
    assert found.stale == ["gateway.errors → gateway.app"]
    assert (found.modules, found.arrows) == (16, 9)
