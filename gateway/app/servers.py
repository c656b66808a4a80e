"""What runs one configured server: a supervised `Downstream`, or a `Pool` of per-identity processes.

A server whose config reads a user's secret (`${user:…}`) cannot be shared: each identity gets its own
process (connection), so it is a `Pool`. A `package:`/`npm:` server runs inside its own environment,
installed on first use (`downstreams.envs`). Either way the relay answers what the server asks, and its
list changes and resource updates reach the gateway. The reloader builds added and changed servers here too.
"""

from collections.abc import Awaitable, Callable
from functools import partial

import mcp.types as types

import adapters
from gateway.config import ServerConfig, StdioServerConfig
from gateway.config.bundled import envs_home
from gateway.downstreams import secrets as user_secrets
from gateway.downstreams.downstream import Downstream
from gateway.downstreams.envs import Env
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
    ) -> None:
        """`oauth`: the sign-ins of servers with `auth: {type: oauth}` (the gateway's; needed once one has it)."""
        self._relay = relay
        self._oauth = oauth
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
        signs_in = not isinstance(server, StdioServerConfig) and server.auth is not None
        if user_secrets.references(server) or signs_in:  # `${user:…}`, `auth`: one process (connection) per identity
            oauth = self._oauth
            assert oauth is not None or not signs_in, "a server with `auth` needs the gateway's OAuth"

            def member(settings: ServerConfig, identity: Identity) -> Target:
                return target(settings, auth=oauth.provider(name, identity)) if oauth and signs_in else target(settings)

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
                admit=partial(oauth.admit, name) if oauth and signs_in else None,
                failed=partial(oauth.failed, name) if oauth and signs_in else None,
                lister=partial(oauth.lister, name) if oauth and signs_in else None,
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
