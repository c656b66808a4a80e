"""A service identity on a downstream server (`auth: {type: client_credentials}`, DESIGN §16): one token for the
server, the same for every caller. The flow is the SDK's own (`ClientCredentialsOAuthProvider`: discovery from the
server's 401, the token from the token endpoint of the configured issuer's metadata), the token held in memory (one
request gets another, so nothing is kept at rest) and renewed `REFRESH_EARLY_S` before it ends."""

import httpx2
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from gateway.config import ClientCredentialsConfig, HttpServerConfig, SseServerConfig
from gateway.downstreams.oauth_tokens import REFRESH_EARLY_S


def service_auth(settings: HttpServerConfig | SseServerConfig) -> httpx2.Auth:
    """The httpx2 auth of a `client_credentials` server's one connection (built from the entry being started, which a
    reload may not have made the running config's yet)."""
    auth = settings.auth
    assert isinstance(auth, ClientCredentialsConfig)
    scope = " ".join(auth.scopes) or None
    return _EarlyClientCredentials(
        settings.url, _Held(), auth.client_id, auth.client_secret, scope=scope, issuer=auth.issuer
    )


class _Held:
    """`TokenStorage` in memory: a service token is one request away, so it is not kept at rest."""

    def __init__(self) -> None:
        self._tokens: OAuthToken | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self._tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return None  # the provider uses the configured client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        pass


class _EarlyClientCredentials(ClientCredentialsOAuthProvider):
    """The SDK's client-credentials flow, counting a token as ended `REFRESH_EARLY_S` before it does: no call carries
    one past its end (the SDK would use it to the second, and a call in flight then fails with 401). Configured scopes
    are asked for as configured: the SDK replaces them with what the server's 401 names (or none)."""

    async def _perform_authorization(self) -> httpx2.Request:
        if self._fixed_client_info.scope:
            self.context.client_metadata.scope = self._fixed_client_info.scope
        return await super()._perform_authorization()

    async def _handle_token_response(self, response: httpx2.Response) -> None:
        await super()._handle_token_response(response)
        if self.context.token_expiry_time is not None:
            self.context.token_expiry_time -= REFRESH_EARLY_S
