"""Who may change the running gateway over HTTP: `POST /reload` now, the page's actions later.

With auth configured, members of `auth.admin_groups` (a JWT's groups claim, a static token's `groups`);
without that key, nobody: being allowed to call tools is not being allowed to restart servers.
Without auth, the HTTP front is one trust domain, as stdio is: a caller on this machine is the operator (who
may as well send SIGHUP or edit the file) and may; a caller from elsewhere may not, nor a request a proxy
forwarded for one (`gateway.fronts.auth.local`, the rule the page, /metrics and /healthz follow too).
"""

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from starlette.requests import Request

from gateway.fronts.auth.callers import IDENTITY_SCOPE
from gateway.fronts.auth.local import Locality
from gateway.session import ANONYMOUS

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Admins:
    groups: frozenset[str] = frozenset()
    """`auth.admin_groups`."""
    locality: Locality = field(default_factory=Locality)
    """Who is on this machine (`listen.trusted_proxies`, `listen.forwarded_client_header`)."""

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
        who = self.locality.stranger(request.scope)
        if who is None:
            return None
        return (
            f"{action} refused for {who}: this gateway has no auth configured, so only callers on this machine "
            "may change it. Configure auth.tokens or auth.jwt, with auth.admin_groups, to allow it from elsewhere."
        )


def _listed(groups: Iterable[str]) -> str:
    names = sorted(groups)
    return f"groups {', '.join(names)}" if names else "no groups"
