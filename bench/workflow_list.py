"""Workflow listing: context size of `think.workflows.list` per mode, and its latency, for 80 and 200 workflows.

Usage, from the repository root: `.venv/bin/python -m bench.workflow_list [--sizes 80 200] [--iterations 20]
[--seed 7]`.

Generates libraries of realistic synthetic workflows (varied names; 1-3 sentence descriptions of 150-400 chars;
2-5 tags; 2-8 inputs with descriptions, some required, some with defaults or enums; outputs; 3-10 steps with
templates, captures and rationales) as YAML files in a temporary folder, loads them with `Library` (JSON
Schema validation included) and lists them in each mode. Prints, per library size and mode, the chars of the
answer as compact JSON (`json.dumps(..., separators=(",", ":"))`), the reduction of compact vs detailed (target
≥ 60 %: PASS/MISS), and p50/p99 latency of load + list (and of list alone).
"""

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from gateway.think.library import Library
from gateway.think.listing import Mode, list_workflows

MODES: tuple[Mode, ...] = ("compact", "standard", "detailed")
TARGET_REDUCTION = 0.60

DOMAINS = {
    "python": ["pytest", "ruff", "mypy", "packaging", "uv"],
    "ci": ["pipeline", "cache", "artifacts", "matrix", "runners"],
    "release": ["changelog", "tagging", "semver", "publishing", "notes"],
    "security": ["secrets", "sbom", "cve", "dependencies", "licenses"],
    "infra": ["terraform", "kubernetes", "helm", "dns", "certificates"],
    "data": ["migrations", "backups", "etl", "schemas", "fixtures"],
    "docs": ["readme", "api-reference", "adr", "tutorials", "diagrams"],
    "review": ["merge-request", "diff", "style", "ownership", "risk"],
    "tickets": ["jira", "triage", "estimates", "sprints", "backlog"],
    "frontend": ["accessibility", "bundles", "storybook", "i18n", "lighthouse"],
    "observability": ["alerts", "dashboards", "traces", "logs", "slo"],
    "incident": ["postmortem", "timeline", "runbook", "paging", "rollback"],
}
ACTIONS = ["audit", "check", "sync", "bootstrap", "triage", "review", "publish", "migrate", "refresh", "verify", "plan"]
OPENERS = [
    "Runs a {a} of the project's {o} and reports what needs attention, with file and line references.",
    "Walks through the {o} of a {d} change step by step, so nothing is forgotten before it ships.",
    "Collects everything about {o} that a reviewer needs, then asks the model for a structured verdict.",
    "Automates the routine {a} of {o} that the team used to do by hand at the end of every sprint.",
]
MIDDLES = [
    "It reads the current state from the tools behind the gateway, compares it with the expected baseline "
    "and records every difference as a capture that later steps can use.",
    "Each step validates its result against a JSON Schema, so a malformed answer is caught early and the run "
    "can be resumed from the last checkpoint instead of starting over.",
    "Optional steps are skipped with `when` conditions, and per-item work is expanded with `foreach` so large "
    "inputs stay within the instruction budget.",
    "Long outputs are truncated or spilled to files, and only the captures relevant to the next step are "
    "passed back as context.",
]
CLOSERS = [
    "Use it before opening a merge request.",
    "Safe to run repeatedly: it only writes when asked to.",
    "Works for monorepos as well as single packages.",
    "Pairs well with the release workflows.",
    "Intended for the weekly maintenance slot.",
]
INPUT_POOL: list[tuple[str, str, str]] = [
    ("project_id", "string", "GitLab project id or path, for example my-group/my-project."),
    ("repo_path", "string", "Absolute path of the local clone the workflow works in."),
    ("branch", "string", "Branch to inspect; the default branch when omitted."),
    ("base_branch", "string", "Branch the changes are compared with and merged into."),
    ("mr_iid", "integer", "Merge request IID, the number after the exclamation mark."),
    ("issue_key", "string", "Jira issue key such as ABC-123."),
    ("environment", "string", "Target environment of the run."),
    ("dry_run", "boolean", "Only report what would change, never write."),
    ("max_items", "integer", "Upper bound on the number of items processed in one run."),
    ("labels", "array", "Labels to filter on; all of them must match."),
    ("since", "string", "Only consider changes after this date (ISO 8601 or relative, e.g. 2 weeks ago)."),
    ("severity", "string", "Lowest severity that is reported."),
    ("notify", "boolean", "Post a summary to the channel when the run finishes."),
    ("config", "object", "Extra settings passed through to the tools, as a mapping."),
    ("python_version", "string", "Python version used to create the environment."),
    ("timeout_minutes", "number", "Give up on a step after this many minutes."),
]
ENUMS = {"environment": ["dev", "staging", "prod"], "severity": ["info", "minor", "major", "blocker"]}
DEFAULTS: dict[str, Any] = {
    "branch": "main",
    "base_branch": "main",
    "dry_run": True,
    "max_items": 50,
    "environment": "staging",
    "severity": "minor",
    "notify": False,
    "python_version": "3.12",
    "timeout_minutes": 15,
}
TOOLS = [
    "git.git_status",
    "git.git_diff",
    "git.git_log",
    "gitlab.gitlab_get_mr",
    "gitlab.gitlab_mr_changes",
    "gitlab.gitlab_list_pipelines",
    "jira.jira_get_issue",
    "jira.jira_search",
    "local.read",
    "local.exec",
    "prompt.say",
]


def _description(rng: random.Random, domain: str, obj: str, action: str) -> str:
    while True:
        parts = [rng.choice(OPENERS).format(a=action, o=obj, d=domain)]
        parts += rng.sample(MIDDLES, rng.randint(0, 2))
        if rng.random() < 0.5:
            parts.append(rng.choice(CLOSERS))
        text = " ".join(parts)
        if 150 <= len(text) <= 400:
            return text


def workflow(rng: random.Random, index: int) -> dict[str, Any]:
    domain = rng.choice(sorted(DOMAINS))
    obj = rng.choice(DOMAINS[domain])
    action = rng.choice(ACTIONS)
    others = [d for d in sorted(DOMAINS) if d != domain]
    tags = [domain, obj, *rng.sample(others, rng.randint(0, 3))]
    inputs: dict[str, Any] = {}
    for name, kind, text in rng.sample(INPUT_POOL, rng.randint(2, 8)):
        decl: dict[str, Any] = {"type": kind, "description": text}
        if name in DEFAULTS:
            decl["default"] = DEFAULTS[name]
        else:
            decl["required"] = rng.random() < 0.7
        if name in ENUMS:
            decl["enum"] = ENUMS[name]
        inputs[name] = decl
    steps: list[dict[str, Any]] = []
    for n in range(rng.randint(3, 10)):
        call = rng.choice(TOOLS)
        step: dict[str, Any] = {
            "id": f"step_{n}",
            "call": call,
            "input_template": {"value": "{{ params." + rng.choice(sorted(inputs)) + " }}"},
            "capture_as": f"result_{n}",
            "rationale": f"Step {n} of the {action} gathers what the next step needs from {call}.",
        }
        if n and rng.random() < 0.4:
            step["deps"] = [f"step_{n - 1}"]
        steps.append(step)
    last = steps[-1]["capture_as"]
    outputs = {"report": "{{ " + last + " }}", "status": "{{ result_0.status | default('done') }}"}
    if rng.random() < 0.5:
        outputs["artifacts"] = "{{ " + steps[0]["capture_as"] + " }}"
    return {
        "name": f"{domain}-{action}-{obj}-{index:03d}",
        "version": f"{rng.randint(1, 3)}.{rng.randint(0, 9)}",
        "description": _description(rng, domain, obj, action),
        "tags": tags[: rng.randint(2, 5)],
        "author": rng.choice(["platform team", "release crew", "security guild", "docs squad"]),
        "driver_version": "stable-2025-11",
        "inputs": inputs,
        "outputs": outputs,
        "limits": {"max_context_bytes": 20000, "truncation_strategy": "both"},
        "steps": steps,
    }


def write_library(directory: Path, count: int, seed: int) -> None:
    rng = random.Random(seed)
    for index in range(count):
        data = workflow(rng, index)
        (directory / f"{data['name']}.yaml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(directory: Path, mode: Mode, iterations: int) -> tuple[int, list[float], list[float]]:
    total: list[float] = []
    list_only: list[float] = []
    chars = 0
    for _ in range(iterations):
        start = time.perf_counter()
        good, bad = Library([directory]).all()
        loaded = time.perf_counter()
        text = json.dumps(list_workflows(good, mode=mode), separators=(",", ":"))
        end = time.perf_counter()
        if bad:
            raise SystemExit(f"{len(bad)} synthetic workflows failed to load: {bad[0]}")
        total.append((end - start) * 1000)
        list_only.append((end - loaded) * 1000)
        chars = len(text)
    return chars, total, list_only


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[80, 200])
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    header = f"{'workflows':>9}  {'mode':<9}{'chars':>9}{'chars/wf':>10}{'p50 ms':>9}{'p99 ms':>9}{'list p50 ms':>13}"
    print(header)
    print("-" * len(header))
    verdicts: list[str] = []
    for size in args.sizes:
        with tempfile.TemporaryDirectory(prefix="wf-bench-") as tmp:
            directory = Path(tmp)
            write_library(directory, size, args.seed + size)
            chars: dict[str, int] = {}
            for mode in MODES:
                count, total, list_only = measure(directory, mode, args.iterations)
                chars[mode] = count
                print(
                    f"{size:>9}  {mode:<9}{count:>9,}{count / size:>10.0f}{percentile(total, 0.5):>9.1f}"
                    f"{percentile(total, 0.99):>9.1f}{statistics.median(list_only):>13.2f}"
                )
        reduction = 1 - chars["compact"] / chars["detailed"]
        standard = 1 - chars["standard"] / chars["detailed"]
        verdict = "PASS" if reduction >= TARGET_REDUCTION else "MISS"
        verdicts.append(
            f"{size} workflows: compact vs detailed -{reduction:.1%} (target ≥ {TARGET_REDUCTION:.0%}): {verdict}; "
            f"standard vs detailed -{standard:.1%}"
        )
    print()
    for line in verdicts:
        print(line)


if __name__ == "__main__":
    main()
