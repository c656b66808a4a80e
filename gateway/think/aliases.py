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
