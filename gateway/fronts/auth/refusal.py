"""Why a request's credentials were refused, in the terms of RFC 6750 (`WWW-Authenticate: Bearer error=…`)."""

from dataclasses import dataclass
from typing import Literal

ErrorCode = Literal["invalid_request", "invalid_token", "insufficient_scope", "temporarily_unavailable"]


@dataclass(frozen=True, slots=True)
class Refused(Exception):
    """`description` says what was wrong and what to do; it never contains the token."""

    status: int
    error: ErrorCode | None
    description: str
    scope: str | None = None
    """For `insufficient_scope`: the scopes the gateway requires (RFC 6750 §3)."""
    retry_after_s: int | None = None
    """For 503: when to try again (`Retry-After`)."""

    def __str__(self) -> str:
        return self.description


def missing(kinds: str) -> Refused:
    # RFC 6750 §3.1: a request without credentials gets no error code, only the challenge.
    return Refused(401, None, f"This gateway requires a bearer token ({kinds}). Send 'Authorization: Bearer <token>'.")


def invalid(why: str) -> Refused:
    return Refused(401, "invalid_token", why)
