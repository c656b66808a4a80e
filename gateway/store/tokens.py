"""The tokens people hold for OAuth-protected downstream servers (`gateway.downstreams.oauth`): one sealed record per
(identity, server), kept by every backend alike so a sign-in on one replica serves calls through all of them.

The store sees only ciphertext under a key that is a digest: `gateway.downstreams.oauth` encrypts before it puts and
names the key by `Identity.owner` and the server, so neither a file nor a Redis key reveals a person or a token.
"""

from typing import Protocol


class Tokens(Protocol):
    where: str

    async def put(self, key: str, sealed: bytes) -> None:
        """Keep `sealed` under `key`, replacing what was there (raises StoreUnavailable)."""
        ...

    async def get(self, key: str) -> bytes | None:
        """What is under `key`, None if nothing is (raises StoreUnavailable)."""
        ...

    async def delete(self, key: str) -> None:
        """Forget `key`: a sign-out, or a grant the authorization server no longer honours (raises StoreUnavailable)."""
        ...
