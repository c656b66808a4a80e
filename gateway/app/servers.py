"""What runs one configured server: a supervised `Downstream`, or a `Pool` of per-identity processes.

A server whose config reads a user's secret (`${user:…}`) cannot be shared: each identity gets its own
process (connection), so it is a `Pool`; so is one that acts as each caller (`auth: oauth` or `token_exchange`).
A `package:`/`npm:` server runs inside its own environment, installed on first use (`downstreams.envs`). Either
way the relay answers what the server asks, and its list changes and resource updates reach the gateway. The
reloader builds added and changed servers here too.
"""

from collections.abc import Awaitable, Callable
from functools import partial

import httpx2
import mcp.types as types

import adapters
from gateway.config import (
    ClientCredentialsConfig,
    HttpServerConfig,
    OAuthConfig,
    ServerConfig,
    SseServerConfig,
    StdioServerConfig,
    TokenExchangeConfig,
)
from gateway.config.bundled import envs_home
from gateway.downstreams import secrets as user_secrets
from gateway.downstreams.client_credentials import service_auth
from gateway.downstreams.downstream import Downstream
from gateway.downstreams.envs import Env
from gateway.downstreams.grants import Grants
from gateway.downstreams.oauth import OAuth
from gateway.downstreams.pool import ListChangedFor, Pool
from gateway.downstreams.relay import Relay
from gateway.downstreams.supervision import Target
from gateway.session import Identity


class Servers:
    """Builds a server's runner from its config entry; call it as `servers(name, config)`."""

    def __init__(
        self,
        relay: Relay,
        secrets: user_secrets.Secrets,
        max_message_bytes: Callable[[], int],
        on_list_changed: ListChangedFor,
        on_resource_updated: Callable[..., Awaitable[None]],
        *,
        oauth: OAuth | None = None,
        grants: Grants | None = None,
    ) -> None:
        """`oauth`: the sign-ins of servers with `auth: {type: oauth}` (the gateway's; needed once one has it);
        `grants`: the exchanged tokens of `token_exchange` servers (likewise)."""
        self._relay = relay
        self._oauth = oauth
        self._grants = grants
        self._secrets = secrets
        self._max_message_bytes = max_message_bytes
        """Read at each build: a reload may change `limits.max_downstream_bytes` for the servers it starts."""
        self._on_list_changed = on_list_changed
        self._on_resource_updated = on_resource_updated

    def __call__(self, name: str, server: ServerConfig) -> Downstream | Pool:
        target: Callable[..., Target] = partial(adapters.target, max_message_bytes=self._max_message_bytes())
        env = Env.of(name, server, envs_home()) if isinstance(server, StdioServerConfig) else None
        if env is not None:  # `package:`/`npm:`: run inside its own environment, installed on first use
            target = env.wrap(target)
        prepare = None if env is None else env.ensure
        roots = [types.Root(uri=uri) for uri in server.roots]
        auth = None if isinstance(server, StdioServerConfig) else server.auth
        if isinstance(server, HttpServerConfig | SseServerConfig) and isinstance(auth, ClientCredentialsConfig):
            target = partial(target, auth=service_auth(server))  # one service token, one connection for everyone
        admit: Callable[[Identity], Awaitable[None]] | None = None
        failed: Callable[[Identity], Awaitable[None]] | None = None
        lister: Callable[[], Awaitable[Identity | None]] | None = None
        person: Callable[[str, Identity], httpx2.Auth]
        if isinstance(auth, OAuthConfig):
            assert self._oauth is not None, "a server with `auth: oauth` needs the gateway's OAuth"
            admit, person = partial(self._oauth.admit, name), self._oauth.provider
            failed, lister = partial(self._oauth.failed, name), partial(self._oauth.lister, name)
        elif isinstance(auth, TokenExchangeConfig):
            assert self._grants is not None, "a server with `auth: token_exchange` needs the gateway's Grants"
            admit, person = partial(self._grants.admit, name), self._grants.auth
        if user_secrets.references(server) or admit is not None:  # `${user:…}`, per-person auth: one per identity

            def member(settings: ServerConfig, identity: Identity) -> Target:
                return target(settings) if admit is None else target(settings, auth=person(name, identity))

            return Pool(
                name,
                server,
                self._secrets,
                member,
                on_list_changed=self._on_list_changed,
                callbacks_for=lambda member, audience: self._relay.callbacks(member, server.timeout_s, roots, audience),
                on_elicitation_complete=self._relay.elicitation_complete,
                on_resource_updated=self._on_resource_updated,
                prepare=prepare,
                admit=admit,
                failed=failed,
                lister=lister,
            )
        return Downstream(
            name,
            partial(target, server),
            protocol=server.protocol,
            timeout_s=server.timeout_s,
            max_timeout_s=server.max_timeout_s,
            connect_timeout_s=server.connect_timeout_s,
            on_list_changed=self._on_list_changed,
            callbacks=self._relay.callbacks(name, server.timeout_s, roots),
            on_resource_updated=self._on_resource_updated,
            on_elicitation_complete=self._relay.elicitation_complete,
            prepare=prepare,
        )
