"""Checkpoints: one taken as each step completes, and rolling a run back to one (`think.reset`)."""

from gateway.think.state import Checkpoint, RunState


def checkpoint(state: RunState, name: str) -> Checkpoint:
    statuses = {sid: st.status for sid, st in state.steps.items()}
    return Checkpoint(name=name, version=state.version + 1, statuses=statuses, capture_keys=list(state.captures))


def restore(state: RunState, point: Checkpoint, line: list[Checkpoint], chunks: int) -> None:
    """Roll back: steps done since `point` are pending again (inputs re-rendered), later foreach children and
    captures go; the run is active again and its checkpoints are `line` (ending at `point`) after the first
    `chunks` spilled chunks: the later ones are dropped."""
    fresh = {
        "status": "pending",
        "input": None,
        "result_hash": None,
        "source": None,
        "reason": None,
        "completed_at": None,
        "attempts": 0,
        "error": None,
        "not_before": None,
        "blocked_by": None,
    }
    state.steps = {
        sid: st if point.statuses[sid] != "pending" else st.model_copy(update=fresh)
        for sid, st in state.steps.items()
        if sid in point.statuses
    }
    state.captures = {k: v for k, v in state.captures.items() if k in point.capture_keys}
    state.observed, state.status = {}, "active"
    state.checkpoints, state.checkpoint_chunks = line, chunks
