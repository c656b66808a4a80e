"""Versions: check `name@version` tokens in arguments and results against live catalogs (warnings, never errors)."""

import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Self

from gateway import telemetry
from gateway.config import GatewayConfig, VersionSourceConfig
from gateway.middleware.version_sources import (
    SourceError,
    Versions,
    check_block,
    compact,
    find_tokens,
    from_file,
    from_http,
    from_tool,
)
from gateway.pipeline import Call, Middleware
from gateway.results import Hint, text_view
from gateway.sdk import CallTool
from gateway.store.base import SharedLoads
from gateway.store.cache import SharedCache

logger = logging.getLogger(__name__)

MAX_SCAN_BYTES = 1024 * 1024
"""Only the first MiB of arguments/results is scanned: tokens live near the top, and 100 MB regex scans cost seconds."""


@dataclass(frozen=True, slots=True)
class CatalogSpec:
    name: str
    load: Callable[[], Awaitable[Versions]]
    ttl_s: float
    append_to: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Check:
    catalog: str
    tools: tuple[str, ...]
    scan: tuple[str, ...]
    pattern: re.Pattern[str]


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


class VersionChecks(Middleware):
    name = "versions"

    @classmethod
    def from_config(
        cls, config: GatewayConfig, *, cache: SharedCache, call_tool: CallTool, loads: SharedLoads | None = None
    ) -> Self:
        catalogs = {
            name: CatalogSpec(
                name, _shared(name, _loader(c.source, call_tool), c.ttl_s, loads), c.ttl_s, tuple(c.append_catalog_to)
            )
            for name, c in config.versions.catalogs.items()
        }
        checks = [
            Check(c.catalog, tuple(c.tools), tuple(c.scan), re.compile(c.pattern)) for c in config.versions.checks
        ]
        return cls(catalogs, checks, cache)

    def __init__(
        self,
        catalogs: Mapping[str, CatalogSpec],
        checks: Sequence[Check],
        cache: SharedCache,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.catalogs = catalogs
        self.checks = list(checks)
        self.cache = cache
        self._clock = clock
        self._failed_until: dict[str, float] = {}

    async def catalog(self, name: str) -> Versions | None:
        """The live catalog; while its source is known to be down, the stale one or None (logged once per TTL)."""
        spec = self.catalogs[name]
        key = f"versions:{name}"
        if self._failed_until.get(name, 0.0) > self._clock():
            cached: Versions | None = self.cache.peek(key)
            return cached
        try:
            versions: Versions = await self.cache.get(key, spec.load, ttl_s=spec.ttl_s)
        except SourceError as exc:
            # Concurrent callers share one failed load (single-flight): only the first of them logs.
            if self._failed_until.get(name, 0.0) <= self._clock():
                logger.warning("versions: catalog %s unavailable for %g s: %s", name, spec.ttl_s, exc)
            self._failed_until[name] = self._clock() + spec.ttl_s
            return None
        if not self.cache.is_fresh(key):
            # SharedCache served the stale value because the reload failed (it logs that). Without a
            # back-off every later call would wait on the down source again (up to timeout_s each).
            self._failed_until[name] = self._clock() + spec.ttl_s
        return versions

    async def on_response(self, call: Call) -> None:
        name = call.name
        blocks: list[str] = []
        for check in self.checks:
            if not any(fnmatchcase(name, p) for p in check.tools):
                continue
            asked = find_tokens(self._arguments_text(call), check.pattern) if "arguments" in check.scan else []
            found = find_tokens(self._result_text(call), check.pattern) if "result" in check.scan else []
            if not asked and not found:
                continue
            catalog = await self.catalog(check.catalog)
            if catalog is None:
                continue
            # Unknown names are warned about only where the model chose them (arguments): results
            # hold arbitrary text, where `admin@10.0.0.1` is an address, not a stack.
            tokens = list(dict.fromkeys([*asked, *(t for t in found if t[0] in catalog)]))
            block = check_block(tokens, catalog, strict_names=True)
            if block:
                blocks.append(block)
                telemetry.event(
                    "gateway.version_check",
                    **{"catalog": check.catalog, "tokens": len(tokens), "warnings": block.count("⚠")},
                )
        for block in dict.fromkeys(blocks):
            call.hints.append(Hint("version_check", block))
        for spec in self.catalogs.values():
            if any(fnmatchcase(name, p) for p in spec.append_to):
                catalog = await self.catalog(spec.name)
                if catalog:
                    call.hints.append(Hint("catalog", f"Live versions ({spec.name}): {compact(catalog)}"))

    def _arguments_text(self, call: Call) -> str:
        """The argument strings (keys and values), one per line, at most MAX_SCAN_BYTES.

        Not their JSON: escapes would glue letters to tokens (`"a\\nbun@1"` reads as `nbun@1`).
        """
        parts: list[str] = []
        size = 0
        stack: list[Any] = [call.params.get("arguments")]
        while stack and size < MAX_SCAN_BYTES:
            node = stack.pop()
            if isinstance(node, str):
                parts.append(node[: MAX_SCAN_BYTES - size])
                size += len(parts[-1])
            elif isinstance(node, dict):
                stack.extend(reversed([x for pair in node.items() for x in pair]))
            elif isinstance(node, list):
                stack.extend(reversed(node))
        return "\n".join(parts)

    def _result_text(self, call: Call) -> str:
        if call.tool_result is not None and call.error is None:
            return text_view(call.tool_result)[:MAX_SCAN_BYTES]
        return ""
