"""One `Authorization` header in, one `Identity` out: static tokens first (a digest compare), then JWT."""

from gateway.fronts.auth.bearer_jwt import JwtVerifier
from gateway.fronts.auth.refusal import invalid, missing
from gateway.fronts.auth.static import StaticTokens
from gateway.session import ANONYMOUS, Identity


class Authenticator:
    def __init__(self, static: StaticTokens, verifier: JwtVerifier | None = None) -> None:
        self.static = static
        self.verifier = verifier

    @property
    def required(self) -> bool:
        """Whether HTTP requests must carry a token; without any configured, every caller is `anonymous`."""
        return bool(self.static) or self.verifier is not None

    async def identify(self, authorization: str | None) -> Identity:
        """Raises `Refused` (401/403/503) with a reason the client can act on."""
        if not self.required:
            return ANONYMOUS
        kinds = " or ".join(
            k for k, on in (("a static token", bool(self.static)), ("a JWT", bool(self.verifier))) if on
        )
        if not authorization:
            raise missing(kinds)
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise missing(kinds)
        identity = self.static.identify(token)
        if identity is not None:
            return identity
        if self.verifier is None:
            raise invalid("the bearer token is not one of this gateway's tokens")
        return await self.verifier.verify(token)
