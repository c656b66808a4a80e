"""Where a downstream's `notifications/message` goes (DESIGN §15), and at what pace.

One downstream connection is shared by every client session, so a server's log is routed by what is in flight:

* to the sessions with a call in flight on that server, each at its own level (a 2026-era request only when
  it opted in with a level: the era's rule), on that call's channel;
* else to the session whose call there ended within `TRAILING_S` (a stdio server's last log can cross its
  call's answer on another path);
* else to every session that set a level with `logging/setLevel` — of a per-user server's process, only the
  sessions of the identity it runs for.

Each session gets at most `throttle.per_s` a second; past it the rest of the second is dropped, and the
session is told when dropping starts and how many were dropped when messages pass again: at `warning`, or at the
session's own level when it asked for a higher one (`logging/setLevel` error: what was dropped was that severe,
and nothing reaches it below the level it asked for).
"""

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mcp.types as types

from gateway.downstreams.throttle import Throttle
from gateway.inflight import LEVELS, Peer, passes, quietly, standalone

TRAILING_S = 2.0
"""How long after a call ends a server's log with no call in flight still counts as that call's."""


@dataclass(frozen=True, slots=True)
class _Recent:
    """The last call that ended on a downstream: whose it was, and when."""

    key: str
    log_level: types.LoggingLevel | None
    modern: bool
    ended: float


class Logs:
    """The log levels sessions asked for, each server's last ended call, and the pace of delivery."""

    def __init__(self, logger_name: Callable[[str, str | None], str]) -> None:
        self._logger_name = logger_name
        """(server, its logger) -> the logger a client is shown (the server named)."""
        self._levels: dict[str, types.LoggingLevel] = {}
        """Logging level per client session key (set by `logging/setLevel`)."""
        self._recent: dict[str, _Recent] = {}
        """Per downstream, the last call that ended there and when: its trailing logs are still its own."""
        self.throttle = Throttle()
        """Log notifications per client session and second, at most (a flood is dropped and counted)."""

    def set_level(self, key: str, level: types.LoggingLevel) -> types.LoggingLevel:
        """Session `key` asked for `level`; returns the most verbose level any session asked for (what a server
        shared by all of them must send)."""
        self._levels[key] = level
        return LEVELS[min(LEVELS.index(lv) for lv in self._levels.values())]

    def level(self, key: str) -> types.LoggingLevel | None:
        return self._levels.get(key)

    def ended(self, server: str, peer: Peer) -> None:
        """`peer`'s call on `server` ended: logs trailing it are still its session's for `TRAILING_S`."""
        # Not the peer itself: its session would keep the client's connection alive after it closes.
        self._recent[server] = _Recent(peer.key, peer.log_level, peer.modern, time.monotonic())

    def forget(self, key: str) -> None:
        self._levels.pop(key, None)
        self.throttle.forget(key)

    async def route(
        self,
        server: str,
        params: types.LoggingMessageNotificationParams,
        inflight: list[Peer],
        connection: Callable[[str], Any | None],
        identity_of: Callable[[str], str | None],
        audience: str | None = None,
    ) -> None:
        """Deliver one log of `server`: `inflight` are the calls on it now, `connection` finds a session's and
        `identity_of` whose it is; `audience`: the identity whose own process of a per-user server it is (None: a
        shared server)."""
        renamed = types.LoggingMessageNotification(
            params=params.model_copy(update={"logger": self._logger_name(server, params.logger)})
        )
        peers = {peer.key: peer for peer in inflight}
        if peers:
            for peer in peers.values():
                wanted = passes(params.level, peer.log_level) and not (peer.modern and peer.log_level is None)
                if not wanted or peer.session is None:
                    continue
                for message in self._paced(peer.key, renamed, peer.log_level):
                    if peer.request_id is None:  # a lane's call: the connection's standalone stream
                        await quietly(standalone, peer.session, message)
                    else:
                        await quietly(peer.session.send_notification, message, peer.request_id)
            return
        recent = self._recent.get(server)
        if recent is not None and time.monotonic() - recent.ended < TRAILING_S:
            found = connection(recent.key)
            if found is not None and passes(params.level, recent.log_level) and not recent.modern:
                for message in self._paced(recent.key, renamed, recent.log_level):
                    await quietly(standalone, found, message)
            return
        for key, level in list(self._levels.items()):
            if audience is not None and identity_of(key) != audience:
                continue  # a user's own process: what it logs (its account, its token) is that user's alone
            found = connection(key)
            if found is not None and passes(params.level, level):
                for message in self._paced(key, renamed, level):
                    await quietly(standalone, found, message)

    def _paced(
        self, key: str, message: types.LoggingMessageNotification, threshold: types.LoggingLevel | None
    ) -> list[types.LoggingMessageNotification]:
        """What session `key` (asking for `threshold` and above) gets of a log `message` under the rate limit: it,
        nothing, or first a notice of the limit (when dropping starts) or of how many were dropped (with the first
        that passes again)."""
        passed, dropped = self.throttle.admit(key)
        said = None
        if dropped < 0:
            said = f"over {self.throttle.per_s} log messages a second: the gateway drops the rest of this second's"
        elif dropped:
            said = f"the gateway dropped {dropped:,} log messages (over {self.throttle.per_s} a second)"
        notices = [] if said is None else [_gateway_log(said, threshold)]
        return [*notices, message] if passed else notices


def _gateway_log(text: str, threshold: types.LoggingLevel | None) -> types.LoggingMessageNotification:
    """The gateway's notice at `warning`, or at `threshold` when that is higher (never below what was asked)."""
    level = "warning" if threshold is None or passes("warning", threshold) else threshold
    return types.LoggingMessageNotification(
        params=types.LoggingMessageNotificationParams(level=level, logger="gateway", data=text)
    )
