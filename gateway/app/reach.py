"""`gateway check --as IDENTITY`, per server: can this identity reach it, and if not, why (DESIGN §16): the policy
denies all its tools, it signs each person in and they hold no token (or one that ended, with or without a refresh),
it exchanges the caller's JWT (which a call without one cannot do), it calls as a configured service identity, or
it is down. Read from the running gateway's state and the token store; nobody's token is used or shown."""

import math
from typing import Any

from gateway.app.gateway import Gateway
from gateway.config import (
    ClientCredentialsConfig,
    GatewayConfig,
    OAuthConfig,
    ServerConfig,
    StdioServerConfig,
    TokenExchangeConfig,
)
from gateway.downstreams.secrets import references
from gateway.errors import GatewayError
from gateway.middleware.policy import Policy, Subject
from gateway.routing.catalog import Catalog
from gateway.session import Identity


async def check_as(config: GatewayConfig, name: str, groups: set[str]) -> int:
    """Print what `name` (in `groups`) is listed and refused, and per server whether they reach it."""
    token = next((t for t in config.auth.tokens if t.name == name), None)
    if token is not None:
        groups |= set(token.groups)
    issuer = None if token is not None or config.auth.jwt is None else config.auth.jwt.issuer  # as the front's JWTs
    identity = Identity(name, "static" if token is not None else "jwt", name, issuer, frozenset(groups))
    gateway = Gateway(config)
    async with gateway.running():
        catalog = await gateway.registry.catalog()
        servers = await reach(gateway, identity, catalog)
    shown, hidden = [], []
    for entry in catalog.tools.values():
        denial = gateway.policy.denial(identity, Subject.of(entry))
        if denial is None:
            shown.append(f"  {entry.exposed}")
        else:
            hidden.append(f"  {entry.exposed}: {denial.why} (policy rule {denial.rule!r})")
    # The rest a server offers, hidden ones only (they are what a rule change would surprise someone with).
    others: list[Subject | None] = [Subject.of(e) for e in catalog.prompts.values()]
    others += [gateway.subjects.resource(r.uri) for r in catalog.resources]
    others += [gateway.subjects.resource(t.uri_template, "resource template") for t in catalog.resource_templates]
    for subject in others:
        denial = None if subject is None else gateway.policy.denial(identity, subject)
        if denial is not None:
            hidden.append(
                f"  {denial.subject.exposed} ({denial.subject.kind}): {denial.why} (policy rule {denial.rule!r})"
            )
    groups_text = ", ".join(sorted(groups)) or "none"
    lines = [f"as {name} (groups: {groups_text}): {len(shown)} of {len(catalog.tools)} tools", *shown]
    print("\n".join([*lines, f"hidden: {len(hidden)}", *hidden, "servers:", *servers]))  # noqa: T201
    return 0


async def reach(gateway: Gateway, identity: Identity, catalog: Catalog) -> list[str]:
    """One line per configured server: `  NAME: yes|no|…: why`."""
    status = gateway.registry.status()
    return [
        f"  {name}: {await _verdict(gateway, name, server, status.get(name, {}), identity, catalog)}"
        for name, server in gateway.config.servers.items()
    ]


async def _verdict(
    gateway: Gateway, name: str, server: ServerConfig, state: dict[str, Any], identity: Identity, catalog: Catalog
) -> str:
    why = _denied(name, catalog, gateway.policy, identity)
    if why is not None:
        return why
    if state.get("state") not in ("up", "idle"):  # a pool (per person) is up or idle: its members are each one's
        error = state.get("last_error")
        return f"no: {state.get('state', 'not running')}" + (f" ({error})" if error else "")
    try:
        why = await _credential(name, server, gateway, identity)
    except GatewayError as exc:  # e.g. no token key: what to fix, as a call would say
        return f"cannot tell: {exc}"
    if why is not None:
        return why
    per_user = f"per user ({', '.join(sorted(references(server)))}), " if references(server) else ""
    idle = " (a process of theirs starts on their first call)" if state.get("state") == "idle" else ""
    return f"yes: {per_user}{state.get('state', 'unknown')}{idle}"


def _denied(server: str, catalog: Catalog, policy: Policy, identity: Identity) -> str | None:
    tools = [e for e in catalog.tools.values() if e.server == server]
    denials = [policy.denial(identity, Subject.of(e)) for e in tools]
    if not tools or any(d is None for d in denials):
        return None  # some tool is allowed (or none is listed yet: nothing to judge)
    rules = sorted({repr(d.rule) for d in denials if d is not None})
    return f"no: the policy denies all {len(tools)} of its tools (policy rule {', '.join(rules)})"


async def _credential(name: str, server: ServerConfig, gateway: Gateway, identity: Identity) -> str | None:
    """Why `identity` can or cannot authenticate to `server` (None: it needs nothing of theirs)."""
    auth = None if isinstance(server, StdioServerConfig) else server.auth
    if isinstance(auth, ClientCredentialsConfig):
        return f"yes: as the service identity (client {auth.client_id!r} at {auth.issuer}), the same for every caller"
    if isinstance(auth, TokenExchangeConfig):
        held = await gateway.grants.storage(name, identity).get_tokens()
        if held is not None and (held.expires_in is None or held.expires_in > 0):
            return f"yes: holds an exchanged token{_for(held.expires_in)}"
        if identity.kind != "jwt":
            return (
                f"no: token exchange needs the caller's JWT, and {identity.name} is not a JWT caller ({identity.kind})"
            )
        return f"yes, with a JWT: the caller's JWT is exchanged at {auth.token_endpoint} on their first call"
    if isinstance(auth, OAuthConfig):
        tokens = await gateway.oauth.storage(name, identity).get_tokens()
        if tokens is None:
            return f"no: needs sign-in, and {identity.name} holds no token (`gateway login {name}`, or a call's link)"
        if tokens.expires_in is not None and tokens.expires_in <= 0:
            if tokens.refresh_token:
                return "yes: the token expired, and a refresh is available (the next call refreshes it)"
            return f"no: the token expired and cannot be refreshed: sign in again (`gateway login {name}`)"
        return f"yes: signed in{_for(tokens.expires_in)}"
    return None


def _for(expires_in: int | None) -> str:
    return "" if expires_in is None else f" (good for {math.ceil(expires_in / 60)} more min)"
