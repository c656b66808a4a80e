"""The step graph's layout: a step one row below its lowest dependency, an edge per dependency and per foreach
item, and bounds (items past MAX_ITEMS become one box, rows wrap) so a run of thousands draws a bounded picture."""

from itertools import pairwise

from gateway.fronts.page.graph import HEIGHT, MAX_ITEMS, MAX_NODES, PER_ROW, Step, layout


def test_each_dependency_is_an_edge_into_a_step_drawn_below_it() -> None:
    drawn = layout(
        [Step("a", "k.echo", ()), Step("b", "k.echo", ()), Step("c", "k.echo", ("a", "b")), Step("d", "x", ("c",))]
    )
    boxes = {b.id: b for b in drawn.boxes}
    assert boxes["a"].y == boxes["b"].y < boxes["c"].y < boxes["d"].y
    assert [(e.source, e.target, e.kind) for e in drawn.edges] == [
        ("a", "c", "dep"),
        ("b", "c", "dep"),
        ("c", "d", "dep"),
    ]
    start = drawn.edges[0].path.split()[0]
    assert start == f"M{boxes['a'].x + 84},{boxes['a'].y + HEIGHT}"  # from the bottom middle of a
    assert drawn.cut == 0 and drawn.height > boxes["d"].y


def test_foreach_items_hang_below_their_step_and_the_rest_is_counted() -> None:
    items = [Step(f"e[{i}]", "k.echo", (), "done", None, "e") for i in range(MAX_ITEMS + 5)]
    drawn = layout([Step("e", "k.echo", (), "expanded"), *items, Step("after", "x", ("e",), "pending")])
    ids = [b.id for b in drawn.boxes]
    assert "e[0]" in ids and f"e[{MAX_ITEMS}]" not in ids and "e[…]" in ids
    more = next(b for b in drawn.boxes if b.id == "e[…]")
    assert more.call == "5 more items" and drawn.cut == 5
    assert ("e", "e[0]", "item") in [(e.source, e.target, e.kind) for e in drawn.edges]
    assert ("e", "after", "dep") in [(e.source, e.target, e.kind) for e in drawn.edges]


def test_a_wide_row_wraps_and_a_huge_graph_is_bounded() -> None:
    wide = layout([Step(f"s{i}", "k.echo", ()) for i in range(PER_ROW + 1)])
    assert len({b.y for b in wide.boxes}) == 2 and wide.width == PER_ROW * (168 + 16)
    huge = layout([Step(f"s{i}", "k.echo", (f"s{i - 1}",) if i else ()) for i in range(MAX_NODES + 20)])
    assert len(huge.boxes) == MAX_NODES and huge.cut == 20
    assert all(e.target in {b.id for b in huge.boxes} for e in huge.edges)


def test_long_names_are_shortened_in_the_box_not_in_its_id() -> None:
    drawn = layout([Step("a_really_long_step_identifier_here", "server.some_tool_with_a_long_name", ())])
    box = drawn.boxes[0]
    assert box.id == "a_really_long_step_identifier_here" and len(box.label) == 22 and box.label.endswith("…")


def test_an_edge_of_a_cycle_is_drawn_as_a_back_edge() -> None:
    drawn = layout([Step("first", "x", ("second",)), Step("second", "x", ("first",))])
    kinds = {(e.source, e.target): e.kind for e in drawn.edges}
    assert kinds == {("second", "first"): "back", ("first", "second"): "dep"}


def test_an_edge_across_rows_runs_down_a_gutter_and_crosses_no_box() -> None:
    steps = [Step("a", "x", ()), Step("b", "x", ("a",)), Step("c", "x", ("b",)), Step("d", "x", ("a", "c"))]
    drawn = layout(steps)
    boxes = {b.id: b for b in drawn.boxes}
    long = next(e for e in drawn.edges if (e.source, e.target) == ("a", "d"))
    points = [tuple(map(int, p[1:].split(","))) for p in long.path.split()]
    assert long.path.startswith("M") and " L" in f" {long.path}"  # straight runs, not a curve through b and c
    for (x1, y1), (x2, y2) in pairwise(points):  # each segment misses every box
        for box in boxes.values():
            inside_x = max(x1, x2) > box.x and min(x1, x2) < box.x + 168
            inside_y = max(y1, y2) > box.y and min(y1, y2) < box.y + HEIGHT
            assert not (inside_x and inside_y), (long.path, box.id)


def test_the_next_ready_step_of_a_run_is_marked() -> None:
    drawn = layout(
        [
            Step("a", "x", (), "done"),
            Step("b", "x", ("a",), "pending"),
            Step("c", "x", ("b",), "pending"),
            Step("e", "x", (), "expanded"),
            Step("e[0]", "x", (), "pending", None, "e"),
        ]
    )
    assert {b.id for b in drawn.boxes if b.ready} == {"b", "e[0]"}  # c waits for b


def test_an_outcome_test_is_drawn_as_an_outcome_edge_and_a_failed_step_counts_as_finished() -> None:
    drawn = layout(
        [
            Step("fetch", "f.fetch", (), "failed"),
            Step("use", "f.echo", ("fetch",), "skipped", "step fetch failed"),
            Step("fallback", "f.echo", ("fetch",), "pending", tests=("fetch",)),
            Step("cleanup", "f.echo", ("use", "fallback"), "pending", tests=("fetch",)),
        ]
    )
    assert [(e.source, e.target, e.kind) for e in drawn.edges] == [
        ("fetch", "use", "dep"),
        ("fetch", "fallback", "outcome"),
        ("use", "cleanup", "dep"),
        ("fallback", "cleanup", "dep"),
        ("fetch", "cleanup", "outcome"),
    ]
    assert [b.id for b in drawn.boxes if b.ready] == ["fallback"]
