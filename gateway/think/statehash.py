"""The run's state_hash, and which older state_hash a step handed out beside others (think.next parallel) may
still be reported with."""

import hashlib
import json

from gateway.think.state import RunState

PARALLEL = 16
"""Instructions one `parallel` answer hands out at most (a 200-item foreach is 200 ready steps), and so the steps
a parallel step may be reported after with the state_hash it was handed out with."""


def state_hash(state: RunState) -> str:
    """The run's progress as a short hash (seed 003: "a precise, versioned instruction"): each step's status and
    recorded result, not what changes without progress (inputs rendered, observations, access times)."""
    return _hashed(state, set())


def _hashed(state: RunState, undone: set[str]) -> str:
    """The state_hash `state` had with the steps `undone` not done yet."""
    rows = [[s, "pending", None] if s in undone else [s, st.status, st.result_hash] for s, st in state.steps.items()]
    return "sha256:" + hashlib.sha256(json.dumps([state.run_id, rows]).encode()).hexdigest()[:16]


def ready_at(state: RunState, step_id: str, given: str) -> bool:
    """Whether `given` is the run's state_hash from before the last few steps done (or failed), none of which `step_id`
    depends on: it was handed out beside them (think.next parallel) and is reported after them. A step the
    client answers from an older instruction than that still gets STATE_CONFLICT."""
    done = sorted(
        (s for s, st in state.steps.items() if st.status in ("done", "failed") and st.completed_at is not None),
        key=lambda s: state.steps[s].completed_at or 0,
        reverse=True,
    )
    for count in range(1, min(len(done), PARALLEL) + 1):
        undone = set(done[:count])
        if step_id in undone or {state.steps[u].template_of or u for u in undone} & set(state.steps[step_id].deps):
            return False
        if given == _hashed(state, undone):
            return True
    return False
