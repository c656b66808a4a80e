"""Which calls a run waits for: per run, its ready steps' tools and input digests, kept in memory.

The engine refreshes a run's entry from every state it loads or saves, so Observe can tell with a dict
look-up that a tool call is no step's (the common case: no disk, no lock, no hashing unless the tool's
name matches). Only a match loads the run, under its locks, to record. Bounded: the least recently used
runs are forgotten, and a forgotten run is read once more when next asked about.
"""

import hashlib
from collections import OrderedDict
from typing import Any

from pydantic_core import to_json

from gateway.think import runner
from gateway.think.state import RunState
from gateway.think.workflow import observable

RUNS = 4096
"""Runs indexed at most (a few hundred bytes each)."""


def digest(value: Any) -> str:
    return hashlib.sha256(to_json(value)).hexdigest()[:16]


class ReadyIndex:
    def __init__(self, size: int = RUNS) -> None:
        self.size = size
        self._runs: OrderedDict[tuple[str, str, str], tuple[int, dict[str, set[str]]]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._runs)

    def index(self, state: RunState) -> None:
        """Note what `state` waits for: its ready steps whose calls pass through the gateway."""
        waiting: dict[str, set[str]] = {}
        for sid in runner.ready(state) if state.status == "active" else []:
            st = state.steps[sid]
            if observable(st.call) and st.input is not None:
                waiting.setdefault(st.call, set()).add(digest(st.input))
        key = (state.owner, state.workflow, state.run_id)
        self._runs[key] = (state.version, waiting)
        self._runs.move_to_end(key)
        while len(self._runs) > self.size:
            self._runs.popitem(last=False)

    def forget(self, owner: str, workflow: str, run_id: str) -> None:
        self._runs.pop((owner, workflow, run_id), None)

    def waits_for(
        self, owner: str, workflow: str, run_id: str, tool: str, arguments: Any, version: int | None = None
    ) -> bool | None:
        """Whether a ready step of the owner's run calls `tool` with exactly `arguments`; None when the run is not
        indexed, or indexed at another version than `version` (the one stored now, when the caller knows it)."""
        key = (owner, workflow, run_id)
        entry = self._runs.get(key)
        if entry is None or (version is not None and entry[0] != version):
            return None
        self._runs.move_to_end(key)
        waiting = entry[1]
        digests = waiting.get(tool)
        return digests is not None and digest(arguments or {}) in digests
