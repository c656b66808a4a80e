"""Bounded run state (seed 001's cleanup): captures no remaining step reads leave the state file.

The state is rewritten (and fsynced) at every step, so what it holds must not grow with the steps done. After each
step, a capture that neither a step still to run nor the workflow's `outputs` reads is spare: the state keeps the
`keep_count` best of them by the run's `pruning` (most_recent, highest_relevance, lru; direct_dependencies keeps
none), and the others leave it, kept by reference in the spill store (written with the state's next save) and
named in the history. Rolling back to a checkpoint brings back, as references, the ones it had.
"""

from gateway.think.context import Limits, TaskOutput, ranked
from gateway.think.graph import Graph
from gateway.think.measure import json_bytes
from gateway.think.runner import complete
from gateway.think.spills import spill_name
from gateway.think.state import Checkpoint, RunState

HISTORY = 100
"""History entries kept (the newest); each step adds two or three."""
CHECKPOINTS = 20
"""Checkpoints kept (the newest): think.reset rolls back to any of them."""


def _base(capture: str) -> str:
    return capture.split("[", 1)[0]  # a foreach child's capture `name[i]` is read as `name`


def retain(state: RunState, graph: Graph, limits: Limits) -> list[str]:
    """Drop from the state the spare captures past `keep_count` (see the module); returns their names."""
    needed = set(graph.reads[""])
    for sid in state.steps:
        if not complete(state, sid):
            needed |= graph.reads[state.steps[sid].template_of or sid]
    spare = [k for k in state.captures if _base(k) not in needed]
    keep = 0 if limits.pruning == "direct_dependencies" else limits.keep_count
    evicted: list[str] = []
    if len(spare) > keep:
        outs = {k: TaskOutput.model_validate(state.captures[k]) for k in spare}
        evicted = ranked(outs, {k: o.relevance for k, o in outs.items()}, limits.pruning, spare)[keep:]
        for key in evicted:
            out = outs[key]
            if out.file_path is None:  # kept whole until now: the spill store keeps it from here on
                state.spills.keep(out.step_id, json_bytes(out.content), out.content)
            del state.captures[key]
            state.log("evict", out.step_id, out.original_size, f"{key}: read by no remaining step")
    del state.history[:-HISTORY]
    del state.checkpoints[:-CHECKPOINTS]
    return evicted


def missing(state: RunState, graph: Graph, point: Checkpoint) -> dict[str, str]:
    """capture -> producing step id, for the captures `point` had that left the state since."""
    found: dict[str, str] = {}
    for key in point.capture_keys:
        if key in state.captures or _base(key) not in graph.producers:
            continue
        producer = graph.producers[_base(key)]
        found[key] = producer + key[len(_base(key)) :]  # `name[3]` was captured by `<producer>[3]`
    return found


def restore_references(state: RunState, evicted: dict[str, str]) -> None:
    """Bring back evicted captures as references to their spills (read whole by the caller's change first)."""
    for key, step_id in evicted.items():
        value = state.spills.values.get(step_id)
        state.captures[key] = TaskOutput(
            step_id=step_id,
            capture_as=key,
            content=None,
            original_size=len(json_bytes(value)),
            truncated=True,
            strategy="reference",
            file_path=state.spills.location(spill_name(step_id)),
        ).model_dump()
