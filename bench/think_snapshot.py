"""Snapshot guard cost: `gateway.think.snapshot.guard` on realistic think.next snapshots of 45 KB to 5 MB.

Usage, from the repository root: `.venv/bin/python -m bench.think_snapshot [--runs 500] [--quick]`.

Each snapshot looks like a code-review step's result (a mermaid diagram, files by category, findings with
messages, a unified diff), built to a target size. 45 KB passes the default 50,000-byte limit untouched; the
others are truncated. p50/p99 of wall time per call over many runs (fewer for the big ones); target: a
50 KB snapshot guarded in under 10 ms.
"""

import argparse
import gc
import statistics
import time
from typing import Any

from pydantic_core import to_json

from gateway.think.snapshot import guard

KB = 1024
TARGET_MS = 10.0
SIZES = [("45 KB", 45 * KB), ("50 KB", 50 * KB), ("500 KB", 500 * KB), ("5 MB", 5 * KB * KB)]


def _build(n: int) -> dict[str, Any]:
    return {
        "change_graph": {
            "sequence_diagram": "sequenceDiagram\n"
            + "".join(f"    Svc{i % 7}->>Db: query #{i} (ünïcode €)\n" for i in range(n * 6)),
            "files_by_category": {
                f"category_{c}": [f"app/models/engine/part_{c}_{j}.rb" for j in range(12)] for c in range(n // 3 + 1)
            },
            "impact_summary": "Removes the legacy engine core; callers move to the new pipeline. " * 3,
        },
        "findings": [
            {
                "file": f"app/services/auth_{i}.rb",
                "line": 40 + i,
                "severity": "high" if i % 5 == 0 else "low",
                "message": f"Possible SQL injection via string interpolation in query #{i}",
                "rule": "Security/SQL",
            }
            for i in range(n * 2)
        ],
        "diff": "".join(
            f"@@ -{i},3 +{i},4 @@\n-  old_call({i})\n+  new_call({i}, opts)\n+  log({i})\n" for i in range(n * 3)
        ),
        "status": "changes_requested",
        "offenses": n,
        "tests": {"passed": 412, "failed": 3, "skipped": 7},
    }


def realistic(target_bytes: int) -> dict[str, Any]:
    """A snapshot within ~1% of `target_bytes` of compact JSON."""
    per_unit = len(to_json(_build(100))) / 100
    n = max(1, round(target_bytes / per_unit))
    snapshot = _build(n)
    while len(to_json(snapshot)) > target_bytes and n > 1:  # at or just under the target
        n -= max(1, n // 200)
        snapshot = _build(n)
    return snapshot


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(snapshot: dict[str, Any], runs: int) -> tuple[list[float], dict[str, Any]]:
    info: dict[str, Any] = {}
    times: list[float] = []
    guard(snapshot, step_id="bench")  # warm-up
    gc.collect()
    for _ in range(runs):
        started = time.perf_counter()
        _, info = guard(snapshot, step_id="bench")
        times.append((time.perf_counter() - started) * 1_000)
    return times, info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=500, help="runs for the 45/50 KB snapshots (big ones get fewer)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 50 runs")
    args = parser.parse_args()
    runs = 50 if args.quick else args.runs
    header = (
        f"{'snapshot':>8} {'bytes':>10} {'final':>7} {'truncated':>9} {'runs':>5} {'p50 ms':>8} {'p99 ms':>8}  target"
    )
    print(header)
    print("-" * len(header))
    for label, target in SIZES:
        snapshot = realistic(target)
        n = max(20, runs * 50 * KB // target) if target > 50 * KB else runs
        times, info = measure(snapshot, n)
        p50, p99 = statistics.median(times), percentile(times, 0.99)
        verdict = ""
        if label == "50 KB":
            verdict = f"< {TARGET_MS:g} ms for 50 KB: {'PASS' if p99 < TARGET_MS else 'MISS'}"
        print(
            f"{label:>8} {info['original_bytes']:>10,} {info['final_bytes']:>7,} {info['truncated']!s:>9} {n:>5} "
            f"{p50:>8.3f} {p99:>8.3f}  {verdict}"
        )


if __name__ == "__main__":
    main()
