"""Which URLs a downstream's URL-mode elicitation may carry to a client, and which client session it asked, so its
completion reaches that session.

The client opens the URL for its user: a `javascript:`, `data:` or `file:` URL would run script, show
forged content or reveal local files in the user's browser, under a request that seems to come from a server
the user trusts. Only `https:` URLs (and `http:` to this machine's loopback) are relayed; any other is refused
(`url_refusal` says why, for the server and the client's notice).

A URL-mode elicitation is finished out of band (a sign-in page, a payment), and the server announces it
later with `notifications/elicitation/complete`, perhaps long after the asking call ended. The gateway
remembers the asking session per (server, elicitation id) until then, bounded per session by count and
age with the oldest dropped first: a long-lived session whose servers never complete their asks must
not grow without limit. A completion that comes after its ask was dropped is logged saying so, with the
limits; the client was not told and would see the sign-in finished only on retrying its call.
"""

import ipaddress
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import mcp.types as types

logger = logging.getLogger(__name__)

RELAYED = (
    "only https: URLs, and http: to this machine (localhost, 127.0.0.0/8, [::1]), are relayed; the server must send one"
)

FORGOTTEN_KEPT = 256
"""How many dropped asks are still recognised (to tell "dropped" from "never asked" in the log)."""


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def refusal(url: str) -> str | None:
    """Why a URL-mode elicitation's `url` is not relayed to the client (None: it is)."""
    if any(c.isspace() or not c.isprintable() for c in url):
        # Browsers drop tabs and newlines inside a URL (`java\tscript:`): what they open is not what was checked.
        return f"its URL holds whitespace or control characters; {RELAYED}"
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as exc:  # e.g. a malformed IPv6 host
        return f"its URL does not parse ({exc}); {RELAYED}"
    scheme, host = parts.scheme.lower()[:32], (host or "")[:128]  # a server's text, bounded in our message
    if scheme not in ("https", "http"):
        return f"its URL is a {scheme + ':' if scheme else 'scheme-less'} URL; {RELAYED}"
    if not host:
        return f"its {scheme}: URL names no host; {RELAYED}"
    if "@" in parts.netloc:  # `https://bank.example@evil.example/` reads as the bank's
        return f"its URL carries user info before the host (`…@{host}`), which disguises the host; send the plain URL"
    if scheme == "http" and not _loopback(host):
        return f"its URL is plain http: to {host!r}, not to this machine; {RELAYED}"
    return None


def url_refusal(request: Any) -> str | None:
    """Why a server's request to the client is not relayed: a URL-mode elicitation whose URL the client must not
    open; None for any other request."""
    params = getattr(request, "params", None)
    return refusal(params.url) if isinstance(params, types.ElicitRequestURLParams) else None


@dataclass(frozen=True, slots=True)
class _Ask:
    key: str
    """The asked client session's key."""
    at: float


class UrlAsks:
    def __init__(
        self, *, per_session: int = 32, max_age_s: float = 3600.0, timer: Callable[[], float] = time.monotonic
    ) -> None:
        self.per_session = per_session
        self.max_age_s = max_age_s
        self._timer = timer
        self._asks: OrderedDict[tuple[str, str], _Ask] = OrderedDict()
        """Oldest first (insertion order is age order)."""
        self._forgotten: OrderedDict[tuple[str, str], str] = OrderedDict()
        """Recently dropped asks -> why, oldest first, at most `FORGOTTEN_KEPT`."""

    def remember(self, server: str, ident: str, key: str) -> None:
        """Session `key` was asked the URL elicitation `ident` of `server`."""
        now = self._timer()
        self._expire(now)
        mine = [ask for ask, held in self._asks.items() if held.key == key and ask != (server, ident)]
        for ask in mine[: max(0, len(mine) - self.per_session + 1)]:
            self._drop(
                ask,
                f"its session was asked {self.per_session} newer ones since, and at most "
                f"limits.url_elicitations_per_session = {self.per_session} are kept (oldest dropped first)",
            )
        self._asks.pop((server, ident), None)
        self._asks[(server, ident)] = _Ask(key, now)

    def asked(self, server: str, ident: str) -> str | None:
        """The key of the session asked (the ask is then forgotten: a completion comes once); None, logged why."""
        self._expire(self._timer())
        ask = self._asks.pop((server, ident), None)
        if ask is not None:
            return ask.key
        why = self._forgotten.pop((server, ident), None)
        if why is None:
            logger.info("server %s completed elicitation %r, which no client session was asked", server, ident)
        else:
            logger.warning(
                "server %s completed URL elicitation %r, but the gateway no longer knows whom it asked: %s. That "
                "client was not told; it sees the outcome when it retries its call.",
                server,
                ident,
                why,
            )
        return None

    def forget(self, key: str) -> None:
        """Session `key` ended: its asks go (a completion for one has nobody to reach)."""
        for ask in [ask for ask, held in self._asks.items() if held.key == key]:
            self._drop(ask, "the session asked has ended")

    def __len__(self) -> int:
        return len(self._asks)

    def _expire(self, now: float) -> None:
        while self._asks:
            ask, held = next(iter(self._asks.items()))
            if now - held.at < self.max_age_s:
                return
            self._drop(
                ask, f"it was asked over limits.url_elicitation_ttl_s = {self.max_age_s:g} s ago, the longest kept"
            )

    def _drop(self, ask: tuple[str, str], why: str) -> None:
        del self._asks[ask]
        self._forgotten[ask] = why
        while len(self._forgotten) > FORGOTTEN_KEPT:
            self._forgotten.popitem(last=False)
