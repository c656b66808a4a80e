"""Captures as TaskOutputs: truncation, gzip spill, relevance scoring and a budgeted `context` for instructions."""

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, TypeAdapter

from gateway.results import cut, utf8_len
from gateway.think.measure import json_bytes, json_size, kind, summarize
from gateway.think.spills import RunSpills

Strategy = Literal["head", "tail", "both", "summary"]
Pruning = Literal["most_recent", "highest_relevance", "lru", "direct_dependencies"]
RECENT_STEPS = 3
"""The seed's "recent task" (0.3) is time-based; steps here run at the model's pace, so recency is by count."""
SUMMARY_KEYS = 20


@dataclass(frozen=True, slots=True)
class Limits:
    max_snapshot_bytes: int = 50_000
    max_string_bytes: int = 5_000
    truncation_strategy: Strategy = "both"
    external_storage_threshold: int = 200_000
    max_context_bytes: int = 102_400  # seed 001's 100 KB
    max_context_tasks: int = 10
    pruning: Pruning = "highest_relevance"
    keep_count: int = 20
    """Captures no remaining step reads that the run state keeps, best first by `pruning` (seed 001's retention
    count, MostRecent(20) by default; direct_dependencies keeps none); the others are kept in the spill store."""
    prune_every: int = 1
    """Prune after every this many completed steps (seed 001's `checkpoint_and_prune: every: N`)."""

    def __post_init__(self) -> None:
        sizes = (self.max_snapshot_bytes, self.max_string_bytes, self.external_storage_threshold)
        if (
            min(*sizes, self.prune_every) < 1
            or min(self.max_context_bytes, self.max_context_tasks, self.keep_count) < 0
        ):  # 0 is allowed: no context
            raise ValueError(f"limits out of range: {self}")

    @classmethod
    def merged(cls, *layers: Mapping[str, Any]) -> "Limits":
        """Defaults, then each layer (gateway config, workflow.limits, step.limits); unknown keys and None values
        are skipped, so a layer states only what it changes. Raises ValueError on a wrong type or value."""
        names = {f.name for f in fields(cls)}
        values = {k: v for layer in layers for k, v in layer.items() if k in names and v is not None}
        return _LIMITS.validate_python(values)


_LIMITS = TypeAdapter(Limits)


def capped(limits: Limits, ceiling: int) -> Limits:
    """`limits` with max_snapshot_bytes at most `ceiling` (the deployment's)."""
    return limits if limits.max_snapshot_bytes <= ceiling else replace(limits, max_snapshot_bytes=ceiling)


class TaskOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    step_id: str
    capture_as: str | None
    content: Any
    original_size: int  # compact-JSON bytes of the whole value
    truncated: bool = False
    strategy: str | None = None
    file_path: str | None = None
    relevance: float = 0.0  # the score the latest `select` gave it
    last_accessed: int = 0
    source: Literal["observed", "reported"] = "reported"
    completed_at: int = 0


def preview(text: str, budget: int, strategy: Literal["head", "tail", "both"]) -> str:
    """The seed's marker lines around at most `budget` bytes of `text`; counts are UTF-8 bytes actually shown."""
    total = utf8_len(text)
    if strategy != "both":
        kept = cut(text, budget, from_end=strategy == "tail")
        n = utf8_len(kept)
        end = "first" if strategy == "head" else "last"
        shown, gone = f"--- Output (showing {end} {n} bytes of {total}) ---", f"--- [{total - n} bytes truncated] ---"
        return "\n".join((shown, kept, gone) if strategy == "head" else (gone, kept, shown))
    # The seed's single "first/last N" must hold for both ends: step N back (a few bytes at most) until both
    # cuts land on character boundaries; text with no such N nearby gets the honest "first A/last B".
    head, tail = cut(text, budget // 2), cut(text, budget // 2, from_end=True)
    n = min(utf8_len(head), utf8_len(tail))
    for m in range(n, max(0, n - 12), -1):
        if utf8_len(first := cut(text, m)) == utf8_len(last := cut(text, m, from_end=True)) == m:
            head, tail = first, last
            break
    h, t = utf8_len(head), utf8_len(tail)
    sides = f"first/last {h}" if h == t else f"first {h}/last {t}"
    return (
        f"--- Output (showing {sides} bytes of {total}) ---\n{head}\n--- [{total - h - t} bytes truncated] ---\n{tail}"
    )


def _describe(value: Any) -> str:
    if isinstance(value, dict | list | tuple):
        return f"{kind(value)} {json.dumps(summarize(value, 400)['__summary'], ensure_ascii=False)}"
    sample = json.dumps(cut(value, 80), ensure_ascii=False) if isinstance(value, str) else json_bytes(value).decode()
    return f"{kind(value)} {sample}"


def _outline(value: Any, size: int, budget: int, file_path: str | None) -> str:
    """A deterministic structural summary (no model call): kinds, lengths and short samples, within `budget`."""
    lines = [f"--- Output Summary ({size} bytes) ---", kind(value)]
    if isinstance(value, dict):
        lines += [f"  {cut(str(k), 60)}: {_describe(v)}" for k, v in list(value.items())[:SUMMARY_KEYS]]
        lines += [f"  … {len(value) - SUMMARY_KEYS} more keys"] if len(value) > SUMMARY_KEYS else []
    elif isinstance(value, list | tuple):
        lines += [f"  [{i}] {_describe(v)}" for i, v in enumerate(value[:3])]
    else:
        lines.append(f"  {_describe(value)}")
    tail = f"--- [Original output stored in: {file_path}] ---" if file_path else "--- [Original output not stored] ---"
    return f"{cut(chr(10).join(lines), max(0, budget - utf8_len(tail) - 1))}\n{tail}"


def make_output(
    step_id: str,
    capture_as: str | None,
    value: Any,
    limits: Limits,
    spills: RunSpills,
    *,
    source: Literal["observed", "reported"],
    clock: int,
    data: bytes | None = None,
) -> TaskOutput:
    """The whole value when its compact JSON fits `max_snapshot_bytes` and is under `external_storage_threshold`;
    else it is spilled whole to the run's `spills` (the store, at the state's next save) and the output holds its
    preview per the strategy (a string value is previewed as its text, anything else as its JSON): templates of
    later steps see the real value, never a preview, on any replica.
    `data`: the value's compact JSON when the caller has it."""
    data = json_bytes(value) if data is None else data
    size = len(data)
    out = TaskOutput(step_id=step_id, capture_as=capture_as, content=value, original_size=size)
    out.source, out.completed_at, out.last_accessed = source, clock, clock
    limit, strategy = limits.max_snapshot_bytes, limits.truncation_strategy
    text = value if isinstance(value, str) else None
    # A string whose text fits is kept even when JSON escaping pushes it over: a preview would hide nothing.
    fits = size <= limit or (text is not None and strategy != "summary" and utf8_len(text) <= limit)
    spill = not fits or size >= limits.external_storage_threshold
    if not spill:
        return out
    # Spilled: the state holds a preview, never the whole value a second time (it is rewritten every step).
    out.file_path = spills.keep(step_id, data, value)
    budget = min(limit, limits.external_storage_threshold)
    if strategy == "summary":
        out.content = _outline(value, size, budget, out.file_path)
    else:
        out.content = preview(data.decode() if text is None else text, budget, strategy)
    out.truncated, out.strategy = True, strategy
    return out


def full_value(output: TaskOutput, spills: RunSpills) -> Any:
    """The complete value: the content when whole, else the spilled value as read for this change; a truncated
    output whose spill is missing (never spilled, or deleted) gives its content, the best there is."""
    if output.truncated and output.file_path is not None:
        return spills.values.get(output.step_id, output.content)
    return output.content


def relevance(
    target: str, deps: Mapping[str, Sequence[str]], producers: Mapping[str, str], completed_order: Sequence[str]
) -> dict[str, float]:
    """Score per capture, first rule that applies (the seed's order): its producer is a direct dependency of
    `target` → 1.0; a transitive one at depth d ≥ 2 (shortest path; direct = 1) → 0.8 / d, so 0.4 at depth 2
    and 0.267 at 3; among the last RECENT_STEPS completed steps → 0.3; else 0.0. The seed's "same agent" rule
    (0.5) has no counterpart here."""
    depth: dict[str, int] = {}
    frontier, level = list(deps.get(target, ())), 1
    while frontier:  # breadth first: each step gets its shortest distance
        fresh = [sid for sid in dict.fromkeys(frontier) if sid not in depth and sid != target]
        depth.update((sid, level) for sid in fresh)
        frontier, level = [d for sid in fresh for d in deps.get(sid, ())], level + 1
    recent = set(completed_order[-RECENT_STEPS:])
    scores: dict[str, float] = {}
    for capture, producer in producers.items():
        d = depth.get(producer)
        scores[capture] = 1.0 if d == 1 else 0.8 / d if d else 0.3 if producer in recent else 0.0
    return scores


def ranked(outs: Mapping[str, TaskOutput], scores: Mapping[str, float], pruning: str, names: list[str]) -> list[str]:
    # Every key ends with the capture name, so equal inputs always give the same order.
    if pruning == "highest_relevance":
        return sorted(names, key=lambda c: (-scores.get(c, 0.0), -outs[c].completed_at, c))
    if pruning == "lru":  # the least recently used are the first to go: keep the most recently used
        return sorted(names, key=lambda c: (-outs[c].last_accessed, -outs[c].completed_at, c))
    return sorted(names, key=lambda c: (-outs[c].completed_at, c))


def select(
    outputs: Mapping[str, TaskOutput],
    scores: Mapping[str, float],
    limits: Limits,
    *,
    always: Sequence[str] = (),
    clock: int,
) -> list[dict[str, Any]]:
    """The instruction's `context`: relevant captures (score > 0, or named in `always`, which go first) ordered
    by `limits.pruning`, at most `max_context_tasks` entries and `max_context_bytes` of JSON. An entry that does
    not fit becomes a stub `{capture, omitted, bytes, file_path}` when that fits. Records each output's score
    and stamps `last_accessed = clock` on those included whole."""
    for name, output in outputs.items():
        output.relevance = scores.get(name, 0.0)
    floor = 1.0 if limits.pruning == "direct_dependencies" else 0.0
    pinned = [c for c in dict.fromkeys(always) if c in outputs]
    rest = [c for c in outputs if c not in pinned and scores.get(c, 0.0) > 0 and scores.get(c, 0.0) >= floor]
    chosen: list[dict[str, Any]] = []
    used = 1  # `[` and `]`, with one comma counted per entry below, so the list's JSON is exactly `used` bytes
    for capture in pinned + ranked(outputs, scores, limits.pruning, rest):
        if len(chosen) >= limits.max_context_tasks:
            break
        out = outputs[capture]
        fields_ = out.model_dump(include={"step_id", "content", "truncated", "file_path", "source"})
        entry = {"capture": capture, "relevance": scores.get(capture, 0.0), **fields_}
        size = json_size(entry) + 1
        if used + size > limits.max_context_bytes:
            entry = {"capture": capture, "omitted": True, "bytes": out.original_size, "file_path": out.file_path}
            size = json_size(entry) + 1
            if used + size > limits.max_context_bytes:
                continue
        else:
            out.last_accessed = clock
        chosen.append(entry)
        used += size
    return chosen


def metrics(outputs: Mapping[str, TaskOutput]) -> dict[str, Any]:
    """For `think.state.get`: bytes held in state (contents), counts, and the mean of the latest scores."""
    values = list(outputs.values())
    return {
        "total_bytes": sum(json_size(o.content) for o in values),
        "count": len(values),
        "truncated": sum(o.truncated for o in values),
        "external": sum(o.file_path is not None for o in values),
        "average_relevance": round(sum(o.relevance for o in values) / len(values), 4) if values else 0.0,
    }
