"""A warning that recurs on every call is logged once, then once per interval with how often it recurred."""

import logging

import pytest

from gateway.telemetry.repeats import Repeating


def test_a_repeated_warning_is_logged_once_per_interval_with_how_often_it_recurred(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    repeats = Repeating(logging.getLogger("tests.repeats"), 60.0, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="tests.repeats"):
        for n in range(190):  # the issue: ~190 lines per replica in 4 s while Redis was down
            now[0] = n * 0.02
            repeats.warning("session state: %s; %s", f"down ({n})", "using this replica's view")
        repeats.warning("another condition: %s", "x")  # a condition of its own, logged at once
        now[0] = 61.0
        repeats.warning("session state: %s; %s", "down (190)", "using this replica's view")
        now[0] = 62.0
        repeats.warning("session state: %s; %s", "down (191)", "using this replica's view")
    assert [r.getMessage() for r in caplog.records] == [
        "session state: down (0); using this replica's view",
        "another condition: x",
        "session state: down (190); using this replica's view (189 more times since it was last logged, 61 s ago)",
    ]
