"""Warnings that recur on every call, logged at a pace an operator can read."""

import logging
import time
from collections.abc import Callable


class Repeating:
    """Warnings that can recur on every call (a store that is down, a client that keeps sending too much): each
    condition is logged at once, then at most once per `interval_s` with how often it recurred meanwhile, so an
    outage costs an operator a line a minute instead of one per call. A condition is its message template."""

    def __init__(self, logger: logging.Logger, interval_s: float = 60.0, clock: Callable[[], float] = time.monotonic):
        self._logger = logger
        self.interval_s = interval_s
        self._clock = clock
        self._seen: dict[str, tuple[float, int]] = {}
        """Template -> (when it was last logged, how often it recurred since); templates are a fixed set in code."""

    def warning(self, message: str, *args: object, exc_info: bool = False) -> None:
        self.log(logging.WARNING, message, *args, exc_info=exc_info)

    def log(self, level: int, message: str, *args: object, exc_info: bool = False) -> None:
        now = self._clock()
        seen = self._seen.get(message)
        if seen is not None and now - seen[0] < self.interval_s:
            self._seen[message] = (seen[0], seen[1] + 1)
            return
        self._seen[message] = (now, 0)
        if seen is not None and seen[1]:
            message += f" ({seen[1]} more times since it was last logged, {now - seen[0]:.0f} s ago)"
        self._logger.log(level, message, *args, exc_info=exc_info)
