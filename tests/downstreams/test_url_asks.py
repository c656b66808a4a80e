"""Remembered URL-mode elicitations are bounded per session by count and age, oldest dropped first; a completion
for a dropped one is logged saying why (DESIGN §15)."""

import logging

import pytest

from gateway.downstreams.url_asks import UrlAsks


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_session_keeps_only_its_newest_asks_and_a_late_completion_says_why(caplog: pytest.LogCaptureFixture) -> None:
    asks = UrlAsks(per_session=2, max_age_s=60)
    for ident in ("a", "b", "c"):
        asks.remember("git", ident, "ann")
    asks.remember("git", "x", "bob")  # another session's asks do not count against ann's
    assert len(asks) == 3
    with caplog.at_level(logging.INFO, logger="gateway.downstreams.url_asks"):
        assert asks.asked("git", "a") is None
        assert asks.asked("git", "b") == asks.asked("git", "c") == "ann"
        assert asks.asked("git", "x") == "bob"
        assert asks.asked("git", "b") is None  # completed once already
    [dropped, again] = caplog.records
    assert dropped.levelno == logging.WARNING
    assert "completed URL elicitation 'a'" in dropped.getMessage()
    assert "limits.url_elicitations_per_session = 2" in dropped.getMessage()
    assert "oldest dropped first" in dropped.getMessage() and "not told" in dropped.getMessage()
    assert "which no client session was asked" in again.getMessage()


def test_asks_older_than_the_limit_are_dropped_oldest_first(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    asks = UrlAsks(per_session=10, max_age_s=60, timer=clock)
    asks.remember("git", "old", "ann")
    clock.now = 30
    asks.remember("git", "new", "ann")
    clock.now = 61
    with caplog.at_level(logging.WARNING, logger="gateway.downstreams.url_asks"):
        assert asks.asked("git", "old") is None
        assert asks.asked("git", "new") == "ann"
    [record] = caplog.records
    assert "limits.url_elicitation_ttl_s = 60 s" in record.getMessage()


def test_a_sessions_asks_go_with_it() -> None:
    asks = UrlAsks()
    asks.remember("git", "a", "ann")
    asks.remember("git", "b", "bob")
    asks.forget("ann")
    assert len(asks) == 1 and asks.asked("git", "b") == "bob" and asks.asked("git", "a") is None
