"""What Think notes of the runs a session drives: taken once, oldest first, per session; bounded."""

from gateway.think import driven
from gateway.think.driven import Driven, DrivenRuns


def test_notes_are_taken_once_per_session_oldest_first() -> None:
    runs = DrivenRuns()
    runs.note("s1", "review", "r1", False)
    runs.note("s2", "review", "r2", False)
    runs.note("s1", "review", "r1", True)
    assert runs.take("s1") == [Driven("review", "r1", False), Driven("review", "r1", True)]
    assert runs.take("s1") == [] and runs.take("s2") == [Driven("review", "r2", False)]


def test_notes_never_taken_are_bounded_by_sessions() -> None:
    runs = DrivenRuns()
    for n in range(driven.SESSIONS + 10):  # calls that failed after Think answered leave their note
        runs.note(f"s{n}", "w", "r", False)
    assert runs.take("s0") == [] and runs.take(f"s{driven.SESSIONS + 9}") == [Driven("w", "r", False)]
