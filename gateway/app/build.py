"""The gateway's parts, each built by one small factory from the config and the parts it needs; `Gateway.__init__`
calls them in the order they depend on (stores → relay → downstreams → registry → exposure → pipeline → front).

Two links run the other way, each a named callback resolved when first called, never at build time: Think's
known tools read the catalog of the registry that serves Think's own servers, and the gateway's own tools
(`gateway.status`, the search's rankers) report on the registry and the exposure that list them.
"""

from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any

from gateway.config import GatewayConfig
from gateway.downstreams.downstream import Downstream
from gateway.downstreams.pool import Pool
from gateway.downstreams.relay import Relay
from gateway.downstreams.supervision import Target
from gateway.downstreams.url_asks import UrlAsks
from gateway.errors import GatewayError
from gateway.fronts.auth.callers import Callers
from gateway.hosted import server as hosted
from gateway.hosted.prompts import PromptLibrary
from gateway.middleware.exposure.find import CALL_TOOL, FIND_TOOLS
from gateway.middleware.exposure.view import Exposure
from gateway.routing.catalog import Entry
from gateway.routing.registry import Registry
from gateway.session import Session, os_user
from gateway.store.base import Outputs
from gateway.store.cache import SharedCache

ListChanged = Callable[[str, str], None]


def bare_server(config: GatewayConfig) -> str | None:
    """The one server whose names are not prefixed, if any."""
    return next((name for name, server in config.servers.items() if not server.prefix), None)


def relay(config: GatewayConfig, bare: str | None) -> Relay:
    """What downstreams ask or tell the clients, with URL elicitations bounded per session."""
    limits = config.limits
    asks = UrlAsks(per_session=limits.url_elicitations_per_session, max_age_s=limits.url_elicitation_ttl_s)
    return Relay(logger_name=partial(_logger_name, bare, config.namespace.separator), url_asks=asks)


def _logger_name(bare: str | None, separator: str, server: str, name: str | None) -> str:
    """A downstream's logger as the client sees it: named by the server (kept as is for an un-prefixed one)."""
    if server == bare:
        return name or server
    return server if name is None else f"{server}{separator}{name}"


def own_tools(
    status: Callable[[str | None], Awaitable[dict[str, dict[str, Any]]]],
    outputs: Outputs,
    prompts: PromptLibrary,
    search: Callable[[], dict[str, Any]],
) -> Downstream:
    """The gateway's own tools (status, read_output, find and call) as the in-process server `gateway`."""
    return Downstream(
        "gateway", lambda: hosted.build(status, outputs, prompts, (FIND_TOOLS, CALL_TOOL), search=search), timeout_s=60
    )


def in_process(servers: Mapping[str, Callable[[], Target]], on_list_changed: ListChanged) -> dict[str, Downstream]:
    """In-process servers (Think's, and what tests and benches pass) as downstreams."""
    return {name: Downstream(name, make, on_list_changed=on_list_changed) for name, make in servers.items()}


def registry(
    config: GatewayConfig,
    downstreams: Mapping[str, Downstream | Pool],
    cache: SharedCache,
    relay: Relay,
    on_changed: Callable[[str, str | None], None],
) -> Registry:
    return Registry(
        downstreams,
        namespace=config.namespace,
        filters={name: server.tools for name, server in config.servers.items()},
        cache=cache,
        on_changed=on_changed,
        bare=bare_server(config),
        relay=relay,
    )


def exposure(
    config: GatewayConfig,
    denial: Callable[[Session, Entry], GatewayError | None],
    workflows: Callable[[], bool],
) -> Exposure:
    """The per-session view of the catalog; `denial` is the policy's one hook into tools (a tool it denies is
    neither listed, nor found, nor called)."""
    bare = bare_server(config)
    return Exposure(
        config.exposure, config.namespace, denial=denial, bare=frozenset({bare} if bare else ()), workflows=workflows
    )


def callers(config: GatewayConfig) -> Callers:
    """Who is calling: the OS user on stdio; over HTTP, per the auth section, with per-user secrets from headers."""
    header = config.secrets.header_prefix if "header" in config.secrets.sources else None
    return Callers(os_user(), secret_header_prefix=header, client_header=config.listen.forwarded_client_header)
