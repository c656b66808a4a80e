"""Which runs each client session drives: what its `think.plan` and `think.next` calls planned, advanced or
finished, told by Think as it answers and taken by the gateway's Observe middleware for the same call (the
session then watches those runs' steps). Observe learns the runs from here, not from the shape of Think's answer."""

from dataclasses import dataclass

from cachetools import LRUCache

SESSIONS = 4096
"""Sessions with a note not taken yet (a call that failed after Think answered leaves one): the oldest go first."""


@dataclass(frozen=True, slots=True)
class Driven:
    workflow: str
    run_id: str
    done: bool


class DrivenRuns:
    def __init__(self) -> None:
        self._notes: LRUCache[str, list[Driven]] = LRUCache(maxsize=SESSIONS)

    def note(self, session: str, workflow: str, run_id: str, done: bool) -> None:
        """The session's call planned or advanced `run_id` (`done`: it finished)."""
        self._notes.setdefault(session, []).append(Driven(workflow, run_id, done))

    def take(self, session: str) -> list[Driven]:
        """What the session's calls noted since last taken, oldest first."""
        return self._notes.pop(session, [])
