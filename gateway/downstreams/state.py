"""The states a supervised downstream server is in (`supervision.Supervised`), as the registry, the pool and the
page read them."""

from enum import StrEnum


class State(StrEnum):
    STARTING = "starting"
    UP = "up"
    RESTARTING = "restarting"
    DOWN = "down"
    IDLE = "idle"
    """A per-user server (`downstreams.pool`) with no user's process running: the next call starts one."""
