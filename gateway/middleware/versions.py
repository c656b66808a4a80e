"""Versions: check `name@version` tokens in arguments and results against live catalogs (warnings, never errors)."""

import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

import mcp.types as types
from pydantic_core import to_json

from gateway import telemetry
from gateway.cache import SharedCache
from gateway.middleware.size_guard import text_view
from gateway.pipeline import Call, Hint, Middleware
from gateway.versions import SourceError, Versions, check_block, compact, find_tokens

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


class VersionChecks(Middleware):
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
        """The live catalog, or None when its source is down and nothing is cached (logged once per TTL)."""
        spec = self.catalogs[name]
        key = f"versions:{name}"
        if self.cache.peek(key) is None and self._failed_until.get(name, 0.0) > self._clock():
            return None
        try:
            versions: Versions = await self.cache.get(key, spec.load, ttl_s=spec.ttl_s)
            return versions
        except SourceError as exc:
            self._failed_until[name] = self._clock() + spec.ttl_s
            logger.warning("versions: catalog %s unavailable for %g s: %s", name, spec.ttl_s, exc)
            return None

    async def on_response(self, call: Call) -> None:
        name = str(call.params.get("name", ""))
        blocks: list[str] = []
        for check in self.checks:
            if not any(fnmatchcase(name, p) for p in check.tools):
                continue
            texts = self._texts(call, check.scan)
            tokens = [t for text in texts for t in find_tokens(text, check.pattern)]
            if not tokens:
                continue
            catalog = await self.catalog(check.catalog)
            if catalog is None:
                continue
            block = check_block(list(dict.fromkeys(tokens)), catalog, strict_names="arguments" in check.scan)
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

    def _texts(self, call: Call, scan: Sequence[str]) -> list[str]:
        texts = []
        arguments: Any = call.params.get("arguments")
        if "arguments" in scan and arguments:
            texts.append(to_json(arguments)[:MAX_SCAN_BYTES].decode("utf-8", errors="ignore"))
        if "result" in scan and isinstance(call.result, types.CallToolResult) and call.error is None:
            texts.append(text_view(call.result)[:MAX_SCAN_BYTES])
        return texts
