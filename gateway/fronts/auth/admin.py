"""Who may change the running gateway over HTTP: `POST /reload` now, the page's actions later.

With auth configured, members of `auth.admin_groups` (a JWT's groups claim, a static token's `groups`);
without that key, nobody: being allowed to call tools is not being allowed to restart servers.
Without auth, the HTTP front is one trust domain, as stdio is: a caller on loopback is the operator (who
may as well send SIGHUP or edit the file) and may; a caller from elsewhere may not, nor a request a
proxy forwarded (the proxy sits on loopback, its client need not).
"""

import ipaddress
import logging
from collections.abc import Iterable
from dataclasses import dataclass

from starlette.requests import Request

from gateway.fronts.auth.callers import IDENTITY_SCOPE
from gateway.session import ANONYMOUS

logger = logging.getLogger(__name__)

FORWARDING_HEADERS = ("forwarded", "x-forwarded-for")
"""Headers a proxy adds: a loopback request carrying one came from the proxy's client, not from this host."""


@dataclass(frozen=True, slots=True)
class Admins:
    groups: frozenset[str] = frozenset()
    """`auth.admin_groups`."""
    forwarded_client_header: str | None = None
    """`listen.forwarded_client_header`: the balancer's header, a sign of forwarding too."""

    def refusal(self, request: Request, action: str) -> str | None:
        """Why the caller of `request` may not do `action` (e.g. "POST /reload"), or None when it may."""
        why = self.why_not(request, action)
        if why is not None:
            logger.warning("refused %s: %s", action, why)
        return why

    def why_not(self, request: Request, action: str) -> str | None:
        """`refusal` without the log line: for showing an action or not (the page asks on every view)."""
        identity = request.scope.get(IDENTITY_SCOPE, ANONYMOUS)
        if identity.kind == "anonymous":  # the auth middleware lets nobody else through without auth configured
            why = self._not_local(request, action)
        elif not self.groups:
            why = (
                f"{action} changes the running gateway and this gateway names no administrators: set "
                f"auth.admin_groups to the groups allowed to ({identity.name!r} is in {_listed(identity.groups)}). "
                "SIGHUP to the gateway process, or saving the config file, reloads it too."
            )
        elif identity.groups & self.groups:
            return None
        else:
            why = (
                f"{action} is for administrators: {identity.name!r} is in {_listed(identity.groups)}, none of "
                f"auth.admin_groups ({_listed(self.groups)}). Ask an administrator, or add one of its groups there."
            )
        return why

    def _not_local(self, request: Request, action: str) -> str | None:
        names = [*FORWARDING_HEADERS, *([self.forwarded_client_header] if self.forwarded_client_header else [])]
        forwarded = next((name for name in names if name in request.headers), None)
        peer = None if request.client is None else request.client.host  # None: a Unix socket, local by nature
        if forwarded is None and (peer is None or _loopback(peer)):
            return None
        who = f"a request a proxy forwarded ({forwarded} header)" if forwarded else f"a caller at {peer}"
        return (
            f"{action} refused for {who}: this gateway has no auth configured, so only callers on loopback may "
            "change it. Configure auth.tokens or auth.jwt, with auth.admin_groups, to allow it from elsewhere."
        )


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # not an address (a test client's name): not provably local
        return False


def _listed(groups: Iterable[str]) -> str:
    names = sorted(groups)
    return f"groups {', '.join(names)}" if names else "no groups"
