"""Who is calling: the identity a session carries (a JWT's subject, a static token's name, or the OS user)."""

import getpass
from dataclasses import dataclass
from typing import Literal

Kind = Literal["jwt", "static", "os", "anonymous"]


@dataclass(frozen=True, slots=True)
class Identity:
    """One principal. `key` tells principals apart; `name` is what policy rules and secrets are looked up by."""

    name: str
    """Display and lookup name: the JWT's name claim, the static token's name, the OS user, or "anonymous"."""
    kind: Kind
    subject: str
    """Unique within `kind` (and `issuer` for JWTs): the `sub` claim, the token's name, the OS user."""
    issuer: str | None = None
    groups: frozenset[str] = frozenset()
    scopes: frozenset[str] = frozenset()

    @property
    def key(self) -> str:
        """The principal's unique key: sessions, processes and secrets are never shared across keys."""
        return f"{self.kind}:{self.issuer or ''}:{self.subject}"


ANONYMOUS = Identity("anonymous", "anonymous", "anonymous")
"""The caller of an HTTP front with no auth configured (one trust domain, like stdio)."""


def os_user() -> Identity:
    """The stdio front's single user: whoever runs the gateway process."""
    try:
        user = getpass.getuser()
    except OSError:  # no passwd entry and no LOGNAME/USER (containers): still one user
        user = "local"
    return Identity(user, "os", user)
