"""Floods from servers, cut to a rate a client can take: per key (a client session), at most `per_s` messages in
any one-second window; the rest are dropped and counted, and the client is told (on the first drop of a window
that it starts, on the next message that passes how many went). Memory: one small entry per key, dropped with
the session (`forget`); keys that are never forgotten (a 2026-era client's, which are per connection and end
without a word) are bounded: past MAX_KEYS, windows that ended with nothing dropped are let go, since a new
window starts the same."""

import time
from collections.abc import Callable
from dataclasses import dataclass

PER_S = 100
"""Log notifications a client session gets per second at most (a person reads none of the rest)."""
MAX_KEYS = 4_096
"""Windows kept before ended ones are let go (then windows with drops still to report, up to this again)."""


@dataclass(slots=True)
class _Window:
    started: float
    sent: int = 0
    dropped: int = 0


class Throttle:
    def __init__(self, per_s: int = PER_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_s = per_s
        self._clock = clock
        self._windows: dict[str, _Window] = {}

    def admit(self, key: str) -> tuple[bool, int]:
        """(pass this message?, messages dropped before it: to report when it passes; on the window's first drop,
        -1: report that dropping starts)."""
        now = self._clock()
        window = self._windows.get(key)
        if window is None or now - window.started >= 1.0:
            dropped = 0 if window is None else window.dropped
            if window is None and len(self._windows) >= MAX_KEYS:
                self._let_go(now)
            self._windows[key] = _Window(now, sent=1)
            return True, dropped
        if window.sent < self.per_s:
            window.sent += 1
            return True, 0
        window.dropped += 1
        return False, -1 if window.dropped == 1 else 0

    def forget(self, key: str) -> None:
        self._windows.pop(key, None)

    def _let_go(self, now: float) -> None:
        """Drop the windows that ended with nothing to report; if all have something, the oldest half."""
        ended = [k for k, w in self._windows.items() if now - w.started >= 1.0 and not w.dropped]
        if len(ended) < MAX_KEYS // 2:
            by_age = sorted(self._windows, key=lambda k: self._windows[k].started)
            ended += by_age[: MAX_KEYS // 2]
        for key in ended:
            self._windows.pop(key, None)

    def __len__(self) -> int:
        return len(self._windows)
