"""think.next snapshot guard: pass-through, truncation (seed markers, UTF-8 safety, summaries, tightening), reject."""

import json
import random
from typing import Any

import pytest
from pydantic_core import to_json

from gateway.results import cut
from gateway.think.errors import ThinkError
from gateway.think.measure import json_bytes, json_size
from gateway.think.snapshot import guard

META = {"__truncated", "__original_size_bytes", "__truncation_warning", "__dropped_keys"}


def size(value: Any) -> int:
    return len(to_json(value))


def nested_list(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def realistic(target_bytes: int) -> dict[str, Any]:
    """A code-review style snapshot of about `target_bytes`: a diagram, file lists, findings, a status."""

    def build(n: int) -> dict[str, Any]:
        return {
            "change_graph": {
                "sequence_diagram": "sequenceDiagram\n" + "    A->>B: call ünïcode €\n" * (n * 8),
                "files_by_category": {f"cat{i}": [f"app/models/m{j}.rb" for j in range(20)] for i in range(n // 4)},
            },
            "findings": [
                {"file": f"app/x{i}.rb", "line": i, "message": "SQL injection risk " * 3} for i in range(n * 2)
            ],
            "status": "failed",
            "offenses": 12,
            "small": {"ok": True, "count": 3},
        }

    per_unit = size(build(100)) / 100
    return build(max(1, round(target_bytes / per_unit)))


def test_under_the_limit_is_returned_unchanged() -> None:
    snap = {"a": "x" * 100, "b": [1, 2, {"c": None}]}
    out, info = guard(snap, step_id="s")
    assert out is snap
    assert info == {"original_bytes": size(snap), "final_bytes": size(snap), "truncated": False}
    exact = {"s": "y" * (1_000 - 8)}  # {"s":"…"} is exactly 1,000 bytes
    assert size(exact) == 1_000 and guard(exact, step_id="s", max_bytes=1_000)[0] is exact


def test_truncate_keeps_every_key_and_small_value_and_cuts_the_largest_first() -> None:
    snap: dict[str, Any] = {
        "diagram": "d" * 80_000,
        "graph": {f"k{i}": "v" * 100 for i in range(50)},
        "rows": [{"id": i, "text": "t" * 50} for i in range(100)],
        "small": {"ok": True},
        "count": 7,
    }
    out, info = guard(snap, step_id="s")
    assert [k for k in out if k not in META] == list(snap)
    assert out["diagram"] == "d" * 5_000 + "... [TRUNCATED: 80000 bytes total]"  # the seed's max_string_bytes
    assert out["graph"] == snap["graph"] and out["rows"] == snap["rows"]  # small values stay whole
    assert out["small"] == {"ok": True} and out["count"] == 7
    assert out["__truncated"] is True and out["__original_size_bytes"] == size(snap)
    warning = out["__truncation_warning"]
    assert "50000" in warning and str(size(snap)) in warning and "file" in warning
    assert info == {"original_bytes": size(snap), "final_bytes": size(out), "truncated": True}
    assert size(out) <= 50_000


def test_when_small_values_alone_overflow_lists_and_objects_keep_their_first_items() -> None:
    snap: dict[str, Any] = {
        "diagram": "d" * 80_000,
        "graph": {f"k{i}": "v" * 100 for i in range(500)},
        "rows": [{"id": i, "text": "t" * 50} for i in range(1_000)],
        "small": {"ok": True},
    }
    out, info = guard(snap, step_id="s")
    assert [k for k in out if k not in META] == list(snap) and out["small"] == {"ok": True}
    kept = [k for k in out["graph"] if k != "__dropped_keys"]
    assert kept == [f"k{i}" for i in range(len(kept))] and 100 < len(kept) < 500
    assert out["graph"]["__dropped_keys"] == 500 - len(kept)
    assert all(out["graph"][k] == "v" * 100 for k in kept)
    rows, more = out["rows"][:-1], out["rows"][-1]
    assert rows == snap["rows"][: len(rows)] and more == f"… {1_000 - len(rows)} more items"
    assert out["diagram"].startswith("d" * 256) and out["diagram"].endswith("... [TRUNCATED: 80000 bytes total]")
    assert info["final_bytes"] == size(out) <= 50_000


def test_string_cut_is_utf8_safe() -> None:
    for char in ("é", "€", "😀"):
        snap = {"text": "a" + char * 20_000}
        out, _ = guard(snap, step_id="s", max_bytes=10_000, max_string_bytes=1_001)
        kept, marker = out["text"].split("... [TRUNCATED: ")
        total = len(snap["text"].encode())
        assert marker == f"{total} bytes total]"
        assert len(kept.encode()) <= 1_001 and len(kept.encode()) > 1_001 - len(char.encode())
        assert snap["text"].startswith(kept)
        kept.encode("utf-8")  # whole characters only
    assert cut("€€€", 5) == "€" and cut("€€€", 5, from_end=True) == "€" and cut("abc", 0) == ""


def test_a_list_in_a_small_budget_keeps_its_small_items_and_cuts_the_big_one() -> None:
    items = ["s" * 10_000, {"deep": {"er": list(range(1_000))}}, 42, "never"]
    out, _ = guard({"items": items}, step_id="s", max_bytes=5_000)
    assert out["items"][0].startswith("s" * 200) and out["items"][0].endswith("... [TRUNCATED: 10000 bytes total]")
    assert out["items"][1:] == items[1:] and size(out) <= 5_000


@pytest.mark.parametrize("snap", [["x" * 100] * 1_000, "y" * 100_000])
def test_non_dict_snapshots_are_wrapped(snap: Any) -> None:
    out, info = guard(snap, step_id="s")
    assert info["truncated"] and set(out) == {"value"} | (META - {"__dropped_keys"})
    if isinstance(snap, str):
        assert out["value"].endswith("... [TRUNCATED: 100000 bytes total]")
    else:  # uniform items: as many whole as fit, the rest counted
        assert out["value"][:-1] == snap[: len(out["value"]) - 1] and len(out["value"]) > 400
        assert out["value"][-1] == f"… {1_001 - len(out['value'])} more items"


def test_many_medium_keys_are_all_kept_with_a_fair_share() -> None:
    snap = {f"key{i}": "z" * 2_000 for i in range(40)}  # 80 KB, no string over max_string_bytes
    out, _ = guard(snap, step_id="s")
    assert all(f"key{i}" in out for i in range(40)) and "__dropped_keys" not in out
    assert all(out[f"key{i}"].endswith("... [TRUNCATED: 2000 bytes total]") for i in range(40))
    assert size(out) <= 50_000


def test_too_many_keys_are_dropped_and_counted() -> None:
    snap = {f"k{i}": i for i in range(50_000)}
    out, info = guard(snap, step_id="s", max_bytes=2_000)
    kept = [k for k in out if k not in META]
    assert kept == [f"k{i}" for i in range(len(kept))] and len(kept) > 50
    assert out["__dropped_keys"] == 50_000 - len(kept)
    assert info["final_bytes"] == size(out) <= 2_000


@pytest.mark.parametrize("max_bytes", [512, 1_000, 5_000, 50_000])
def test_result_always_fits_and_is_deterministic(max_bytes: int) -> None:
    rng = random.Random(max_bytes)

    def value(depth: int) -> Any:
        pick = rng.random()
        if depth > 3 or pick < 0.4:
            return rng.choice([rng.randint(0, 10**9), None, True, 'é€😀"\n' * rng.choice([0, 3, 40, 2_000])])
        if pick < 0.7:
            return [value(depth + 1) for _ in range(rng.randint(0, 8))]
        return {f'k{rng.randint(0, 10**6)}\n"': value(depth + 1) for _ in range(rng.randint(0, 8))}

    for _ in range(12):
        snap = {f"top{i}": value(0) for i in range(rng.randint(1, 60))}
        out, info = guard(snap, step_id="s", max_bytes=max_bytes, max_string_bytes=min(5_000, max_bytes))
        assert info["final_bytes"] == size(out) <= max_bytes
        assert guard(snap, step_id="s", max_bytes=max_bytes, max_string_bytes=min(5_000, max_bytes))[0] == out


def test_deep_nesting_does_not_recurse() -> None:
    deep = nested_list(10_000)
    assert json_size(deep) == 20_002 and json_bytes(deep) == b"[" * 10_001 + b"]" * 10_001  # 10,001 levels
    out, info = guard({"deep": deep, "ok": 1}, step_id="s")
    # Under the byte limit, but pydantic_core (and so the state file) cannot serialize it: truncated anyway.
    assert info == {"original_bytes": 20_018, "final_bytes": size(out), "truncated": True}
    assert out["ok"] == 1 and "nested too deeply" in out["__truncation_warning"]
    level, depth = out["deep"], 0
    while isinstance(level, list):  # the structure is kept down to a depth the state file can hold, then summarized
        level, depth = level[0], depth + 1
    assert depth == 63 and level["__type"] == "list" and level["__summary"] == "list with 1 items"
    wide_and_deep = {"d": [nested_list(3_000) for _ in range(50)], "s": "x" * 60_000}
    out, info = guard(wide_and_deep, step_id="s")
    assert info["truncated"] and size(out) <= 50_000
    with pytest.raises(ThinkError) as caught:
        guard(deep, step_id="s", mode="reject")
    assert "nested too deeply" in caught.value.body()["message"]


def test_iterative_encoding_matches_pydantic_core() -> None:
    values: list[Any] = [{}, [], {"a": [1, {}, []], "b": {"c": 'x"y'}}, [[1, 2], [3, [4, []]]], "s", 5, None, (1, 2)]
    for value in values:
        assert json_bytes([nested_list(300), value]) == b"[" + b"[" * 301 + b"]" * 301 + b"," + to_json(value) + b"]"


def test_lone_surrogates_do_not_crash() -> None:
    snap = {"bad": json.loads('"\\ud800"') * 30_000, "ok": 1}
    out, info = guard(snap, step_id="s")
    assert info["truncated"] and out["ok"] == 1 and json_size(out) <= 50_000


def test_reject_body_has_the_seed_fields() -> None:
    snap = {"blob": "b" * 60_000}
    with pytest.raises(ThinkError) as caught:
        guard(snap, step_id="understand_change", mode="reject")
    body = caught.value.body()
    assert body == {
        "error": "PAYLOAD_TOO_LARGE",
        "details": body["message"],
        "guidance": body["guidance"],
        "message": f"result_snapshot exceeded the 50000-byte limit (actual: {size(snap)} bytes, limit: 50000)",
        "current_step": "understand_change",
        "snapshot_size_bytes": size(snap),
        "max_allowed_bytes": 50_000,
    }
    assert "file" in body["guidance"] and "Summariz" in body["guidance"]
    small = {"a": 1}
    assert guard(small, step_id="s", mode="reject")[0] is small


def test_a_60kb_and_a_20mb_snapshot_are_both_cut_to_the_limit() -> None:
    # How fast (a 50 KB snapshot in under 10 ms) is measured by bench.think_snapshot, not timed here.
    for target in (60_000, 20_000_000):
        snap = realistic(target)
        out, info = guard(snap, step_id="s")
        assert info["original_bytes"] == size(snap) > 50_000 and size(out) <= 50_000, target
