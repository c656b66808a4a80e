"""A step graph laid out for the page as plain numbers a template draws as SVG (no script, no layout library).

Layered top-down: a step sits one row below the lowest of its dependencies, in file order along its row; each
dependency is an edge from the bottom of one box to the top of the other. A foreach step's items hang below it
(an "item" edge); past `MAX_ITEMS` the rest are one box that says how many. Rows wrap at `PER_ROW` boxes so a
phone shows a tall graph, not a wide one.
"""

from collections.abc import Sequence
from dataclasses import dataclass

WIDTH, HEIGHT, GAP_X, GAP_Y = 168, 46, 16, 34
PER_ROW = 4
MAX_ITEMS = 8
MAX_NODES = 80
LABEL = 22
"""Characters of a step id or call shown in a box (the whole is in its tooltip)."""


@dataclass(frozen=True, slots=True)
class Step:
    id: str
    call: str
    deps: Sequence[str]
    status: str | None = None
    """A run's step status (None: the workflow's graph, no run)."""
    tag: str | None = None
    """`when`, `foreach`, or the reason a step was skipped."""
    parent: str | None = None
    """The foreach step this item was expanded from."""
    tests: Sequence[str] = ()
    """Steps whose outcome its `when` tests (`failed(x)`, `succeeded(x)`): drawn as "outcome" edges."""


@dataclass(frozen=True, slots=True)
class Box:
    id: str
    call: str
    status: str | None
    tag: str | None
    x: int
    y: int
    label: str
    sub: str
    ready: bool = False
    """Pending with every dependency finished: the run's next step, highlighted."""
    deps: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Edge:
    source: str
    target: str
    kind: str
    """"dep", "item", "outcome" (from a step whose outcome the target's `when` tests), or "back" (into a step
    drawn above its dependency: part of a cycle)."""
    path: str


@dataclass(frozen=True, slots=True)
class Drawn:
    boxes: list[Box]
    edges: list[Edge]
    width: int
    height: int
    cut: int
    """Steps left out (past `MAX_NODES`, or foreach items past `MAX_ITEMS`)."""


def _short(text: str) -> str:
    return text if len(text) <= LABEL else text[: LABEL - 1] + "…"


def _bounded(steps: Sequence[Step]) -> tuple[list[Step], int]:
    """At most `MAX_ITEMS` items per foreach step (then one box saying how many more), `MAX_NODES` in all."""
    shown: list[Step] = []
    items: dict[str, int] = {}
    cut: dict[str, int] = {}
    for step in steps:
        if step.parent is not None:
            items[step.parent] = items.get(step.parent, 0) + 1
            if items[step.parent] > MAX_ITEMS:
                cut[step.parent] = cut.get(step.parent, 0) + 1
                continue
        shown.append(step)
    for parent, more in cut.items():
        shown.append(Step(f"{parent}[…]", f"{more} more items", (), "more", None, parent))
    dropped = sum(cut.values()) + max(0, len(shown) - MAX_NODES)
    return shown[:MAX_NODES], dropped


def layout(steps: Sequence[Step]) -> Drawn:
    shown, cut = _bounded(steps)
    ids = {s.id for s in shown}
    level: dict[str, int] = {}
    for step in shown:  # file order is a valid order (deps come first; items after their parent)
        above = [level[d] for d in (*step.deps, *([step.parent] if step.parent else [])) if d in level]
        level[step.id] = 1 + max(above) if above else 0
    statuses = {s.id: s.status for s in steps}
    rows: dict[int, list[Step]] = {}
    for step in shown:
        rows.setdefault(level[step.id], []).append(step)
    boxes: dict[str, Box] = {}
    y = GAP_Y // 2
    widest = 1
    for number in sorted(rows):
        members = rows[number]
        for start in range(0, len(members), PER_ROW):
            line = members[start : start + PER_ROW]
            widest = max(widest, len(line))
            for column, step in enumerate(line):
                x = GAP_X // 2 + column * (WIDTH + GAP_X)
                sub = step.status or ("" if step.parent else step.call)
                ready = _ready(step, statuses)
                label, deps = _short(step.id), tuple(step.deps)
                boxes[step.id] = Box(step.id, step.call, step.status, step.tag, x, y, label, _short(sub), ready, deps)
            y += HEIGHT + GAP_Y
    edges = []
    for step in shown:
        ends = [(d, "outcome" if d in step.tests else "dep") for d in step.deps if d in ids]
        ends += [(t, "outcome") for t in step.tests if t in ids and t not in step.deps]  # tested further up
        ends += [(step.parent, "item")] if step.parent in ids else []
        for source, kind in ends:
            if boxes[source].y >= boxes[step.id].y:
                kind = "back"  # a dependency drawn below its step: a cycle (the workflow is refused, the page says why)
            edges.append(Edge(source, step.id, kind, _path(boxes[source], boxes[step.id])))
    return Drawn(list(boxes.values()), edges, widest * (WIDTH + GAP_X), y - GAP_Y // 2, cut)


FINISHED = frozenset({"done", "skipped", "expanded", "failed"})


def _ready(step: Step, statuses: dict[str, str | None]) -> bool:
    """A pending step whose dependencies (and foreach parent) are all finished: what the run does next."""
    if step.status != "pending":
        return False
    return all(statuses.get(d) in FINISHED for d in (*step.deps, *([step.parent] if step.parent else [])))


def _path(a: Box, b: Box) -> str:
    """From the bottom middle of `a` to the top middle of `b` (where the arrowhead sits): a curve between adjacent
    rows; across rows, down the gutter between columns beside `b`, so the edge passes no box on the way."""
    x1, y1, x2, y2 = a.x + WIDTH // 2, a.y + HEIGHT, b.x + WIDTH // 2, b.y - 2
    if y2 - y1 <= GAP_Y or b.y <= a.y:
        bend = max(GAP_Y // 2, (y2 - y1) // 2)
        return f"M{x1},{y1} C{x1},{y1 + bend} {x2},{y2 - bend} {x2},{y2}"
    gutter = max(2, b.x - GAP_X // 2)  # the free strip left of b's column (the margin, for the first column)
    below, above = y1 + GAP_Y // 2, y2 - GAP_Y // 2 + 2
    return f"M{x1},{y1} L{x1},{below} L{gutter},{below} L{gutter},{above} L{x2},{above} L{x2},{y2}"
