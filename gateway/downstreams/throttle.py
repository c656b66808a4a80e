"""Floods from servers, cut to a rate a client can take: per key (a client session), at most `per_s` messages in
any one-second window; the rest are dropped and counted, and the client is told (on the first drop of a window
that it starts, on the next message that passes how many went). Memory: one small entry per key, dropped with
the session (`forget`)."""

import time
from dataclasses import dataclass

PER_S = 100
"""Log notifications a client session gets per second at most (a person reads none of the rest)."""


@dataclass(slots=True)
class _Window:
    started: float
    sent: int = 0
    dropped: int = 0


class Throttle:
    def __init__(self, per_s: int = PER_S) -> None:
        self.per_s = per_s
        self._windows: dict[str, _Window] = {}

    def admit(self, key: str) -> tuple[bool, int]:
        """(pass this message?, messages dropped before it: to report when it passes; on the window's first drop,
        -1: report that dropping starts)."""
        now = time.monotonic()
        window = self._windows.get(key)
        if window is None or now - window.started >= 1.0:
            dropped = 0 if window is None else window.dropped
            self._windows[key] = _Window(now, sent=1)
            return True, dropped
        if window.sent < self.per_s:
            window.sent += 1
            return True, 0
        window.dropped += 1
        return False, -1 if window.dropped == 1 else 0

    def forget(self, key: str) -> None:
        self._windows.pop(key, None)
