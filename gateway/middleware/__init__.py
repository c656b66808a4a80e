"""The default response pipeline; the list order is the hook order (see `gateway.pipeline`)."""

import re
from collections.abc import Awaitable, Callable

from gateway.cache import SharedCache
from gateway.config import GatewayConfig, VersionSourceConfig
from gateway.middleware.bootstrap import Bootstrap
from gateway.middleware.observe import Observe
from gateway.middleware.size_guard import SizeGuard
from gateway.middleware.steering import Rule, Steering
from gateway.middleware.version_sources import Versions, from_file, from_http, from_tool
from gateway.middleware.versions import CatalogSpec, Check, VersionChecks
from gateway.pipeline import Middleware
from gateway.prompts import PromptLibrary
from gateway.store.base import Outputs, SharedLoads
from gateway.think.engine import Engine
from gateway.types import CallTool


def _loader(source: VersionSourceConfig, call_tool: CallTool) -> Callable[[], Awaitable[Versions]]:
    match source.type:
        case "file":
            path = source.path or ""
            return lambda: from_file(path)
        case "http":
            url, headers, timeout = source.url or "", source.headers, source.timeout_s
            return lambda: from_http(url, headers, timeout)
        case _:
            tool, arguments = source.tool or "", dict(source.arguments)
            return lambda: from_tool(call_tool, tool, arguments)


def _shared(
    name: str, load: Callable[[], Awaitable[Versions]], ttl_s: float, loads: SharedLoads | None
) -> Callable[[], Awaitable[Versions]]:
    """With a shared store, one replica fetches a catalog for all (the others read it from the store)."""
    if loads is None:
        return load

    async def shared() -> Versions:
        versions: Versions = await loads.load(f"versions:{name}", load, ttl_s)
        return versions

    return shared


THINK_INLINE_BYTES = 200_000


def default_chain(
    config: GatewayConfig,
    *,
    outputs: Outputs,
    cache: SharedCache,
    prompts: PromptLibrary,
    call_tool: CallTool,
    driver_full_text: str,
    engine: Engine | None = None,
    loads: SharedLoads | None = None,
) -> list[Middleware]:
    """versions → observe → bootstrap → steering → size_guard (last: it measures what the others produced)."""
    limits = config.limits
    overrides = {glob: rule.model_dump() for glob, rule in limits.tools.items()}
    sep = config.namespace.separator
    for name, server in config.servers.items():
        overrides.setdefault(f"{name}{sep}*", server.limits.model_dump())
    # Think answers are bounded by design (context budget) and structured: a preview of an instruction
    # would break the loop, so they get room unless the config says otherwise.
    overrides.setdefault(f"think{sep}*", {"max_inline_bytes": max(limits.max_inline_bytes, THINK_INLINE_BYTES)})
    size_guard = SizeGuard(
        outputs,
        max_inline_bytes=limits.max_inline_bytes,
        max_request_bytes=limits.max_request_bytes,
        strategy=limits.truncation_strategy,
        overrides=overrides,
    )
    catalogs = {
        name: CatalogSpec(
            name, _shared(name, _loader(c.source, call_tool), c.ttl_s, loads), c.ttl_s, tuple(c.append_catalog_to)
        )
        for name, c in config.versions.catalogs.items()
    }
    checks = [Check(c.catalog, tuple(c.tools), tuple(c.scan), re.compile(c.pattern)) for c in config.versions.checks]
    rules = [Rule(tuple(h.tools), h.on, h.text) for h in config.steering.hints]
    driver = prompts.get(config.bootstrap.driver_version)
    observe: list[Middleware] = [] if engine is None else [Observe(engine, separator=sep)]
    return [
        VersionChecks(catalogs, checks, cache),
        *observe,
        Bootstrap(driver, mode=config.bootstrap.mode, full_text=driver_full_text),
        Steering(rules, spills=size_guard.will_spill),
        size_guard,
    ]
