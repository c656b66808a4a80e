"""Context management: Limits layering, TaskOutput truncation and spill, relevance, select/pruning, metrics."""

import gzip
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic_core import to_json

from gateway.think.context import Limits, TaskOutput, full_value, make_output, metrics, preview, relevance, select
from gateway.think.spills import RunSpills

MARKERS = re.compile(r"--- Output \(showing (first|last|first/last|first \d+/last) (\d+) bytes of (\d+)\) ---")
GONE = re.compile(r"--- \[(\d+) bytes truncated\] ---")


def out(step: str, content: Any = "x", *, at: int = 0, accessed: int = 0, size: int | None = None) -> TaskOutput:
    return TaskOutput(
        step_id=step,
        capture_as=f"c_{step}",
        content=content,
        original_size=len(to_json(content)) if size is None else size,
        completed_at=at,
        last_accessed=accessed,
    )


# -- Limits -----------------------------------------------------------------------------------------------


def test_limits_defaults_and_layers() -> None:
    assert Limits() == Limits.merged()
    merged = Limits.merged(
        {"max_snapshot_bytes": 1_000, "pruning": "lru", "max_inline_bytes": 5},  # unknown keys are ignored
        {"max_snapshot_bytes": 2_000, "truncation_strategy": "head"},
        {"truncation_strategy": None, "max_context_tasks": 0},  # None does not override
    )
    assert merged == Limits(
        max_snapshot_bytes=2_000, truncation_strategy="head", pruning="lru", max_context_tasks=0, max_string_bytes=5_000
    )


@pytest.mark.parametrize(
    "layer",
    [{"truncation_strategy": "middle"}, {"pruning": "random"}, {"max_snapshot_bytes": 0}, {"max_context_bytes": -1}],
)
def test_limits_reject_bad_values(layer: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Limits.merged(layer)


# -- make_output: whole, head/tail/both markers, summary, spill ----------------------------------------------


def test_small_value_is_kept_whole() -> None:
    value = {"a": [1, 2, 3]}
    spills = RunSpills()
    o = make_output("s1", "cap", value, Limits(), spills, source="observed", clock=4)
    assert (o.content, o.truncated, o.strategy, o.file_path) == (value, False, None, None)
    assert (o.original_size, o.source, o.completed_at, o.last_accessed) == (len(to_json(value)), "observed", 4, 4)
    assert full_value(o, spills) == value and not spills.pending


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        ("head", "--- Output (showing first 100 bytes of 1000) ---\n" + "a" * 100 + "\n--- [900 bytes truncated] ---"),
        ("tail", "--- [900 bytes truncated] ---\n" + "b" * 100 + "\n--- Output (showing last 100 bytes of 1000) ---"),
        (
            "both",
            "--- Output (showing first/last 50 bytes of 1000) ---\n"
            + "a" * 50
            + "\n--- [900 bytes truncated] ---\n"
            + "b" * 50,
        ),
    ],
)
def test_marker_lines(tmp_path: Path, strategy: Any, expected: str) -> None:
    text = "a" * 500 + "b" * 500
    limits = Limits(max_snapshot_bytes=100, truncation_strategy=strategy)
    o = make_output("s", "c", text, limits, RunSpills(), source="reported", clock=1)
    assert o.content == expected and o.truncated and o.strategy == strategy
    assert o.original_size == 1_002  # the JSON string, quotes included


def test_markers_cut_on_utf8_boundaries() -> None:
    text = "€" * 100  # 300 bytes, 3 per character
    head = ["--- Output (showing first 99 bytes of 300) ---", "€" * 33, "--- [201 bytes truncated] ---"]
    assert preview(text, 100, "head") == "\n".join(head)
    tail = ["--- [201 bytes truncated] ---", "€" * 33, "--- Output (showing last 99 bytes of 300) ---"]
    assert preview(text, 100, "tail") == "\n".join(tail)
    both = ["--- Output (showing first/last 48 bytes of 300) ---", "€" * 16, "--- [204 bytes truncated] ---", "€" * 16]
    assert preview(text, 100, "both") == "\n".join(both)


def test_marker_counts_always_add_up() -> None:
    rng = random.Random(7)
    alphabet = ["a", "é", "€", "😀", "\n"]
    odd = "😀" * 60 + "a"  # boundaries at 4k from the start, 4k + 1 from the end: never one N for both
    expected = ["--- Output (showing first 24/last 25 bytes of 241) ---", "😀" * 6, "--- [192 bytes truncated] ---"]
    assert preview(odd, 50, "both") == "\n".join([*expected, "😀" * 6 + "a"])
    for text in [odd] + ["".join(rng.choice(alphabet) for _ in range(rng.randint(50, 400))) for _ in range(200)]:
        total = len(text.encode())
        for strategy in ("head", "tail", "both"):
            budget = rng.randint(1, total - 1)
            shown = preview(text, budget, strategy)
            head_line = MARKERS.search(shown)
            gone = GONE.search(shown)
            assert head_line is not None and gone is not None and int(head_line[3]) == total
            body = shown.replace(head_line[0], "").replace(gone[0], "")
            kept = len(body.encode()) - (3 if strategy == "both" else 2)  # the newlines around the marker lines
            assert kept <= budget and kept + int(gone[1]) == total
            if head_line[1] == "first/last":
                assert 2 * int(head_line[2]) == kept


def test_json_values_are_previewed_as_their_json(tmp_path: Path) -> None:
    value = {"rows": [{"id": i, "name": "ünï"} for i in range(200)]}
    o = make_output("s", "c", value, Limits(max_snapshot_bytes=300), RunSpills(), source="reported", clock=0)
    data = to_json(value)
    assert "ünï".encode() in data
    assert o.content.startswith(f"--- Output (showing first/last 150 bytes of {len(data)}) ---\n{data[:150].decode()}")


def test_summary_is_structural_and_deterministic(tmp_path: Path) -> None:
    value = {"files": [f"f{i}.py" for i in range(500)], "report": "r" * 10_000, "meta": {"a": 1}, "n": 3}
    limits = Limits(max_snapshot_bytes=1_000, truncation_strategy="summary")
    first = make_output("s", "c", value, limits, RunSpills(), source="reported", clock=0)
    again = make_output("s", "c", value, limits, RunSpills(), source="reported", clock=0)
    assert first.content == again.content and first.strategy == "summary" and first.truncated
    text = first.content
    assert text.startswith(f"--- Output Summary ({first.original_size} bytes) ---\ndict(4)\n")
    assert "  files: list(500) " in text and '  report: str(10000) "rrrr' in text and "  n: int 3" in text
    assert first.file_path is not None  # truncated values are always kept whole on disk
    assert text.endswith(f"--- [Original output stored in: {first.file_path}] ---") and len(text.encode()) <= 1_000


def test_large_output_spills_gzip_and_round_trips(tmp_path: Path) -> None:
    value = {"log": "line é€\n" * 50_000, "items": list(range(10_000))}
    limits = Limits(external_storage_threshold=100_000, truncation_strategy="summary")
    spills = RunSpills(lambda name: str(tmp_path / name))
    o = make_output("fetch[3]", "pages[3]", value, limits, spills, source="observed", clock=2)
    assert o.truncated and o.file_path is not None
    ((name, blob),) = spills.pending.items()
    assert name.startswith("fetch_3_-") and name.endswith(".json.gz") and o.file_path == str(tmp_path / name)
    assert json.loads(gzip.decompress(blob)) == value
    assert f"--- [Original output stored in: {o.file_path}] ---" in o.content
    assert full_value(TaskOutput.model_validate(o.model_dump()), spills) == value
    other = make_output("fetch_3_", "x", value, limits, spills, source="observed", clock=2)
    assert other.file_path != o.file_path and len(spills.pending) == 2  # distinct ids never share a spill
    assert full_value(o, RunSpills()) == o.content  # not read (gone from the store): the best there is
    small = make_output("s", "c", "t" * 200, Limits(max_snapshot_bytes=50), spills, source="reported", clock=0)
    assert small.truncated and small.file_path is not None and full_value(small, spills) == "t" * 200


# -- relevance ---------------------------------------------------------------------------------------------


def test_relevance_follows_the_seed() -> None:
    deps = {"d": ["c", "x"], "c": ["b"], "b": ["a"], "x": ["a"], "a": [], "e": [], "old": []}
    producers = {"cap_c": "c", "cap_x": "x", "cap_b": "b", "cap_a": "a", "cap_e": "e", "cap_old": "old"}
    order = ["old", "a", "b", "x", "c", "e"]
    scores = relevance("d", deps, producers, order)
    assert scores == {
        "cap_c": 1.0,
        "cap_x": 1.0,
        "cap_b": 0.4,  # depth 2: 0.8 / 2
        "cap_a": 0.4,  # depth 2 through x (the shortest path), not 3 through c, b
        "cap_e": 0.3,  # not a dependency, among the last 3 completed
        "cap_old": 0.0,
    }
    chain = {"t": ["s3"], "s3": ["s2"], "s2": ["s1"], "s1": []}
    far = relevance("t", chain, {"one": "s1"}, ["s1", "s2", "s3"])
    assert far["one"] == pytest.approx(0.8 / 3)  # transitive first, even though it is also recent


# -- select ------------------------------------------------------------------------------------------------


def outputs() -> dict[str, TaskOutput]:
    return {
        "a": out("sa", {"v": "a"}, at=1, accessed=9),
        "b": out("sb", {"v": "b"}, at=2, accessed=3),
        "c": out("sc", {"v": "c"}, at=3, accessed=5),
        "d": out("sd", {"v": "d"}, at=4, accessed=1),
        "z": out("sz", {"v": "z"}, at=5, accessed=0),
    }


SCORES = {"a": 1.0, "b": 0.4, "c": 1.0, "d": 0.3, "z": 0.0}


@pytest.mark.parametrize(
    ("pruning", "expected"),
    [
        ("highest_relevance", ["c", "a", "b", "d"]),
        ("most_recent", ["d", "c", "b", "a"]),
        ("lru", ["a", "c", "b", "d"]),
        ("direct_dependencies", ["c", "a"]),
    ],
)
def test_pruning_strategies(pruning: Any, expected: list[str]) -> None:
    outs = outputs()
    chosen = select(outs, SCORES, Limits(pruning=pruning), clock=42)
    assert [e["capture"] for e in chosen] == expected
    assert chosen[0] == {
        "capture": expected[0],
        "relevance": SCORES[expected[0]],
        "step_id": f"s{expected[0]}",
        "content": {"v": expected[0]},
        "truncated": False,
        "file_path": None,
        "source": "reported",
    }
    assert all(outs[c].last_accessed == 42 for c in expected) and outs["z"].last_accessed == 0
    assert all(o.relevance == SCORES[k] for k, o in outs.items())
    capped = select(outputs(), SCORES, Limits(pruning=pruning, max_context_tasks=1), clock=1)
    assert [e["capture"] for e in capped] == expected[:1]


def test_always_comes_first_even_without_score() -> None:
    chosen = select(outputs(), SCORES, Limits(pruning="direct_dependencies"), always=["z", "nope", "b"], clock=0)
    assert [e["capture"] for e in chosen] == ["z", "b", "c", "a"]


def test_byte_budget_with_stubs() -> None:
    outs = outputs()
    outs["big"] = out("sbig", "B" * 5_000, at=6, size=2_000_000)
    outs["big"].file_path = "/spill/sbig.json.gz"
    scores = {**SCORES, "big": 1.0}
    chosen = select(outs, scores, Limits(max_context_bytes=900), clock=7)
    assert chosen[0] == {"capture": "big", "omitted": True, "bytes": 2_000_000, "file_path": "/spill/sbig.json.gz"}
    assert outs["big"].last_accessed == 0  # a stub is not an access
    for budget in (0, 2, 60, 150, 400, 900, 20_000):
        picked = select(outputs() | {"big": outs["big"]}, scores, Limits(max_context_bytes=budget), clock=7)
        assert len(to_json(picked)) <= max(budget, 2)
    tiny = select(outputs(), SCORES, Limits(max_context_bytes=150), clock=0)
    assert [e["capture"] for e in tiny] == ["c"] and len(to_json(tiny)) <= 150


def test_select_is_deterministic() -> None:
    rng = random.Random(3)
    names = [f"cap{i}" for i in range(30)]
    base = {n: out(f"s{n}", {"n": n, "pad": "p" * rng.randint(0, 500)}, at=rng.randint(0, 5)) for n in names}
    scores = {n: rng.choice([0.0, 0.3, 0.4, 1.0]) for n in names}
    for pruning in ("most_recent", "highest_relevance", "lru", "direct_dependencies"):
        limits = Limits(pruning=pruning, max_context_bytes=3_000)
        first = select({k: v.model_copy() for k, v in base.items()}, scores, limits, clock=9)
        shuffled = dict(rng.sample(sorted(base.items()), len(base)))
        assert select({k: v.model_copy() for k, v in shuffled.items()}, scores, limits, clock=9) == first


def test_metrics(tmp_path: Path) -> None:
    assert metrics({}) == {"total_bytes": 0, "count": 0, "truncated": 0, "external": 0, "average_relevance": 0.0}
    limits = Limits(max_snapshot_bytes=100, external_storage_threshold=1_000)
    outs = {
        "a": make_output("a", "a", {"x": 1}, limits, RunSpills(), source="reported", clock=0),
        "b": make_output("b", "b", "y" * 500, limits, RunSpills(), source="reported", clock=1),
        "c": make_output("c", "c", "z" * 5_000, limits, RunSpills(), source="observed", clock=2),
    }
    select(outs, {"a": 1.0, "b": 0.4, "c": 0.3}, limits, clock=3)
    m = metrics(outs)
    assert m == {
        "total_bytes": sum(len(to_json(o.content)) for o in outs.values()),
        "count": 3,
        "truncated": 2,
        "external": 2,  # both truncated values are spilled, whatever the threshold
        "average_relevance": round(1.7 / 3, 4),
    }
