"""The seeds' `limits` keys, translated to this engine's before the workflow schema sees them.

The context-management seed writes `max_stdout_bytes` and `cleanup_strategy: {type, keep_count}`. Here a
step's result is one value (its "stdout") bounded by `max_snapshot_bytes`, and pruning is `pruning` plus
`keep_count`, so those keys are aliases. Keys for things this engine does not do (a separate stderr,
a spill folder of one's own) are refused with what to write instead, never silently ignored.
"""

from collections.abc import Callable
from typing import Any

from gateway.think.errors import Diagnostic

_PRUNING = ("most_recent", "highest_relevance", "lru", "direct_dependencies")
_REFUSED = {
    "max_stderr_bytes": "a step's result is one value here: bound it with max_snapshot_bytes",
    "max_combined_bytes": "a step's result is one value here: bound it with max_snapshot_bytes",
    "external_storage_dir": "spills are written next to the run's state file; remove this key",
    "compress_external": "spills are always gzip-compressed; remove this key",
}


def translate(limits: Any, file: str, path: str) -> tuple[Any, list[Diagnostic]]:
    """`limits` with the seed aliases replaced by this engine's keys, and the problems found on the way."""
    if not isinstance(limits, dict):
        return limits, []  # the schema reports the wrong type
    out = dict(limits)
    problems: list[Diagnostic] = []

    def problem(key: str, message: str, guidance: str) -> None:
        problems.append(Diagnostic("YAML_SCHEMA_VIOLATION", file, f"{path}.{key}", message, guidance))

    for key, why in _REFUSED.items():
        if key in out:
            problem(key, f"{key} is not supported", f"{why}.")
            del out[key]
    if "max_stdout_bytes" in out:
        value = out.pop("max_stdout_bytes")
        if "max_snapshot_bytes" in out and out["max_snapshot_bytes"] != value:
            problem(
                "max_stdout_bytes",
                f"max_stdout_bytes ({value!r}) and max_snapshot_bytes ({out['max_snapshot_bytes']!r}) disagree",
                "max_stdout_bytes is an alias of max_snapshot_bytes: keep one of them.",
            )
        else:
            out["max_snapshot_bytes"] = value
    if "cleanup_strategy" in out:
        _cleanup(out, out.pop("cleanup_strategy"), problem)
    return out, problems


def _cleanup(out: dict[str, Any], strategy: Any, problem: Callable[[str, str, str], None]) -> None:
    """`cleanup_strategy: lru` or `{type: lru, keep_count: 10}` -> `pruning: lru` (+ `keep_count: 10`: how many
    captures no remaining step reads the run state keeps, seed 001's retention count)."""
    kind, keep = (strategy.get("type"), strategy.get("keep_count")) if isinstance(strategy, dict) else (strategy, None)
    extra = sorted(set(strategy) - {"type", "keep_count"}) if isinstance(strategy, dict) else []
    if kind not in _PRUNING or extra:
        problem(
            "cleanup_strategy",
            f"cleanup_strategy {strategy!r} is not one of {list(_PRUNING)}"
            + (f" (unknown keys {extra})" if extra else ""),
            "Write cleanup_strategy: {type: <one of those>, keep_count: N}, or pruning: <type> with keep_count: N.",
        )
        return
    for key, value in (("pruning", kind), ("keep_count", keep)):
        if value is None:
            continue
        if key in out and out[key] != value:
            problem(
                "cleanup_strategy",
                f"cleanup_strategy sets {key} to {value!r} but {key} is {out[key]!r}",
                "cleanup_strategy is an alias of pruning + keep_count: keep one of them.",
            )
        out[key] = value


def repeat_loop(step: dict[str, Any], file: str, path: str) -> tuple[dict[str, Any], list[Diagnostic]]:
    """Seed 001's `loop: {type: repeat, count: N}` -> `foreach` over 0..N-1 (`item` is the index, `loop.index`
    counts from 1): the step runs N times, each a step of its own."""
    if "loop" not in step:
        return step, []
    step = dict(step)
    loop = step.pop("loop")
    count = loop.get("count") if isinstance(loop, dict) else None
    if (
        not isinstance(loop, dict)
        or loop.get("type") != "repeat"
        or set(loop) != {"type", "count"}
        or not isinstance(count, int)
        or isinstance(count, bool)
        or not 0 <= count <= 10_000
        or "foreach" in step
    ):
        why = "a step has one of loop and foreach" if "foreach" in step else f"loop {loop!r} is not supported"
        fix = "Write loop: {type: repeat, count: N} (0 <= N <= 10000), or foreach: over a list, not both."
        return step, [Diagnostic("YAML_SCHEMA_VIOLATION", file, f"{path}.loop", why, fix)]
    step["foreach"] = f"{{{{ {list(range(count))} }}}}"  # templates have no `range` (their globals are cleared)
    return step, []


def prune_hooks(data: dict[str, Any], file: str) -> list[Diagnostic]:
    """Seed 001's `hooks: {post_task: [{checkpoint_and_prune: {every, strategy, keep_count}}]}` -> `limits`:
    `prune_every`, `pruning`, `keep_count` (in place). Other hooks run code this engine does not: refused."""
    hooks = data.pop("hooks")
    entries = hooks.get("post_task") if isinstance(hooks, dict) and set(hooks) == {"post_task"} else None
    only = entries[0] if isinstance(entries, list) and len(entries) == 1 else None
    prune = (
        only.get("checkpoint_and_prune") if isinstance(only, dict) and set(only) == {"checkpoint_and_prune"} else None
    )
    known = {"every", "strategy", "keep_count"}
    every = prune.get("every", 1) if isinstance(prune, dict) else None
    if not isinstance(prune, dict) or not set(prune) <= known or not isinstance(every, int) or every < 1:
        return [
            Diagnostic(
                "YAML_SCHEMA_VIOLATION",
                file,
                "hooks",
                f"hooks {hooks!r} is not supported",
                "The one hook is hooks: {post_task: [{checkpoint_and_prune: {every: N, strategy: <pruning>, "
                "keep_count: N}}]}.",
            )
        ]
    limits = dict(data.get("limits") or {})
    given = {"prune_every": prune.get("every"), "pruning": prune.get("strategy"), "keep_count": prune.get("keep_count")}
    for key, value in given.items():
        if value is not None:
            limits.setdefault(key, value)
    data["limits"] = limits
    return []
