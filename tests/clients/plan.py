"""What every Python driver of the client matrix shares (stdlib only: it runs in each SDK's own venv).

A driver reads a plan (JSON: where to connect, who answers, the cases), connects once with its SDK, runs each
case's steps in order and prints one JSON line per case; the test (tests/system/test_client_matrix.py) judges.
A step is an operation on the session: `tools`, `resources`, `prompts` (list), `call`, `read`, `prompt` (get).
`uri_match` on a `read` takes the URI from the previous step's result (a spill's link, whatever form it came in).
"""

import json
import re
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

Step = dict[str, Any]
Operation = Callable[[Step], Awaitable[dict[str, Any]]]


def load() -> dict[str, Any]:
    with open(sys.argv[1], encoding="utf-8") as f:
        plan: dict[str, Any] = json.load(f)
    return plan


def emit(line: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


async def run_cases(plan: dict[str, Any], operate: Operation) -> None:
    """Each case's steps in order; a step that raises ends its case (the error is the observation)."""
    for case in plan["cases"]:
        observed: list[dict[str, Any]] = []
        for step in case["steps"]:
            step = dict(step)
            if "uri_match" in step:
                found = re.search(step["uri_match"], json.dumps(observed[-1]) if observed else "")
                step["uri"] = found.group(0) if found else "(no match of " + step["uri_match"] + ")"
            start = time.monotonic()
            try:
                outcome = await operate(step)
            except Exception as exc:  # noqa: BLE001 -- what the client raised is what the matrix reports
                outcome = {"error": f"{type(exc).__name__}: {exc}"[:2000]}
            outcome["ms"] = round((time.monotonic() - start) * 1000)
            observed.append(outcome)
            if "error" in outcome and not step.get("error_ok"):
                break
        emit({"case": case["name"], "steps": observed})
