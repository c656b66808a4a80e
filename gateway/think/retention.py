"""Bounded run state (seed 001's cleanup): captures no remaining step reads leave the state file.

The state is rewritten (and fsynced) at every step, so what it holds must not grow with the steps done. After each
step, a capture that neither a step still to run nor the workflow's `outputs` reads is spare: the state keeps the
`keep_count` best of them by the run's `pruning` (most_recent, highest_relevance, lru; direct_dependencies keeps
none), and the others leave it, kept by reference in the spill store (written with the state's next save) and
named in the history. Rolling back to a checkpoint brings back, as references, the ones it had; a replay and
the final answer read them there too (`evicted`): eviction moves a result, it never loses one.

Checkpoints are kept the same way: the newest CHECKPOINTS stay in the state, and older ones are spilled in
chunks of CHUNK (`~checkpoints.<i>`, one blob each, written once), so think.reset reaches every step the run
passed while the state file stays flat.
"""

from typing import Any

from gateway.think.context import Limits, TaskOutput, ranked
from gateway.think.graph import Graph
from gateway.think.measure import json_bytes
from gateway.think.runner import complete
from gateway.think.spills import spill_name
from gateway.think.state import Checkpoint, RunState, StepState

HISTORY = 100
"""History entries kept (the newest); each step adds two or three."""
CHECKPOINTS = 20
"""Checkpoints kept in the state (the newest); older ones are spilled, CHUNK at a time."""
CHUNK = 20
"""Checkpoints per spilled chunk: one write per CHUNK steps, and a rollback reads one chunk."""


def _base(capture: str) -> str:
    return capture.split("[", 1)[0]  # a foreach child's capture `name[i]` is read as `name`


def retain(state: RunState, graph: Graph, limits: Limits) -> list[str]:
    """Drop from the state the spare captures past `keep_count` (see the module); returns their names."""
    needed = set(graph.reads[""])
    for sid in state.steps:
        if not complete(state, sid):
            needed |= graph.reads[state.steps[sid].template_of or sid]
    spare = [k for k in state.captures if _base(k) not in needed]
    if state.clock % limits.prune_every:  # seed 001's cadence: prune every N steps
        spare = []
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
    _spill_checkpoints(state)
    return evicted


def chunk_id(index: int) -> str:
    """The spill of the `index`-th chunk of checkpoints (kept like a step's value; no step id contains `~`)."""
    return f"~checkpoints.{index}"


def _spill_checkpoints(state: RunState) -> None:
    if len(state.checkpoints) < CHECKPOINTS + CHUNK:
        return
    old, state.checkpoints = state.checkpoints[:CHUNK], state.checkpoints[CHUNK:]
    value = [c.model_dump() for c in old]
    state.spills.keep(chunk_id(state.checkpoint_chunks), json_bytes(value), value)
    state.checkpoint_chunks += 1


def chunk_ids(state: RunState) -> list[str]:
    """The spills think.reset reads when the checkpoint it wants is not among those in the state."""
    return [chunk_id(i) for i in range(state.checkpoint_chunks)]


def find_checkpoint(state: RunState, name: str) -> tuple[Checkpoint, list[Checkpoint], int] | None:
    """The newest checkpoint named `name`, the checkpoints up to it (the run's after a rollback to it) and the
    chunks still spilled before them; spilled chunks are looked in as far as read (`chunk_ids`)."""
    for i, point in reversed(list(enumerate(state.checkpoints))):
        if point.name == name:
            return point, state.checkpoints[: i + 1], state.checkpoint_chunks
    for index in reversed(range(state.checkpoint_chunks)):
        stored: Any = state.spills.values.get(chunk_id(index))
        chunk = [Checkpoint.model_validate(c) for c in stored or []]
        for i, point in reversed(list(enumerate(chunk))):
            if point.name == name:
                return point, chunk[: i + 1], index
    return None


def reference(state: RunState, key: str, step_id: str) -> dict[str, Any]:
    """A capture record pointing at the spill of `step_id` (its whole value read by the caller's change first)."""
    value = state.spills.values.get(step_id)
    return TaskOutput(
        step_id=step_id,
        capture_as=key,
        content=None,
        original_size=len(json_bytes(value)),
        truncated=True,
        strategy="reference",
        file_path=state.spills.location(spill_name(step_id)),
    ).model_dump()


def capture_key(st: StepState, capture_as: str) -> str:
    return capture_as if st.index is None else f"{capture_as}[{st.index}]"


def evicted(state: RunState, graph: Graph) -> dict[str, str]:
    """capture -> producing step id, for every done step whose capture left the state (its value is in its spill)."""
    found: dict[str, str] = {}
    for sid, st in state.steps.items():
        capture_as = graph.steps[st.template_of or sid].capture_as if (st.template_of or sid) in graph.steps else None
        if st.status == "done" and capture_as and capture_key(st, capture_as) not in state.captures:
            found[capture_key(st, capture_as)] = sid
    return found


def missing(state: RunState, graph: Graph, point: Checkpoint) -> dict[str, str]:
    """capture -> producing step id, for the captures `point` had that left the state since."""
    found: dict[str, str] = {}
    for key in point.capture_keys:
        if key in state.captures or _base(key) not in graph.producers:
            continue
        producer = graph.producers[_base(key)]
        found[key] = producer + key[len(_base(key)) :]  # `name[3]` was captured by `<producer>[3]`
    return found


def restore_references(state: RunState, gone: dict[str, str]) -> None:
    """Bring back evicted captures as references to their spills (read whole by the caller's change first)."""
    for key, step_id in gone.items():
        state.captures[key] = reference(state, key, step_id)


def where_kept(state: RunState, graph: Graph) -> dict[str, dict[str, str]]:
    """Every result of the run, in step order: `inline` (whole in the state), `spilled` (a preview in the state,
    the whole value at `read`) or `evicted` (left the state once no step read it; whole at `read`)."""
    gone = evicted(state, graph)
    found: dict[str, dict[str, str]] = {}
    for sid, st in state.steps.items():
        capture_as = graph.steps[st.template_of or sid].capture_as
        key = capture_key(st, capture_as) if capture_as and st.status == "done" else None
        if key is None or key.startswith("__"):
            continue
        record = state.captures.get(key)
        if record is not None and record.get("file_path"):
            found[key] = {"step_id": sid, "kept": "spilled", "read": str(record["file_path"])}
        elif record is not None:
            found[key] = {"step_id": sid, "kept": "inline"}
        elif key in gone:
            found[key] = {"step_id": sid, "kept": "evicted", "read": state.spills.location(spill_name(sid))}
    return found
