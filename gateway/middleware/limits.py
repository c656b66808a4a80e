"""The size limits in force for one call: the defaults, per-server and per-tool overrides, first match wins.

Shared by the size guard (which enforces them) and steering (whose `truncated` condition is "the size
guard will spill this"), so neither middleware calls into the other.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Literal, Self

from gateway.config import GatewayConfig
from gateway.pipeline import Call

Key = Literal["max_inline_bytes", "max_request_bytes"]
THINK_INLINE_BYTES = 200_000
"""Think answers are bounded by design (context budget) and structured: a preview of an instruction would
break the loop, so they get this much room unless the config says otherwise."""
MATCHES_KEPT = 4096


@dataclass(frozen=True, slots=True)
class SizeLimits:
    max_inline_bytes: int = 20_000
    max_request_bytes: int = 10 * 1024 * 1024
    overrides: Mapping[str, Mapping[str, int | None]] = field(default_factory=dict)
    """Exposed-tool glob or `server.*`-style glob -> {max_inline_bytes, max_request_bytes}; first match wins."""
    _found: dict[tuple[str, Key], int] = field(default_factory=dict, repr=False, compare=False)
    """Limits already matched, by (name, key): every call asks up to three times, the globs do not change."""

    @classmethod
    def from_config(cls, config: GatewayConfig) -> Self:
        limits = config.limits
        overrides = {glob: rule.model_dump() for glob, rule in limits.tools.items()}
        sep = config.namespace.separator
        for name, server in config.servers.items():
            overrides.setdefault(f"{name}{sep}*", server.limits.model_dump())
        overrides.setdefault(f"think{sep}*", {"max_inline_bytes": max(limits.max_inline_bytes, THINK_INLINE_BYTES)})
        return cls(limits.max_inline_bytes, limits.max_request_bytes, overrides)

    def limit(self, call: Call, key: Key) -> int:
        return self.of(call.name, key)

    def of(self, name: str, key: Key = "max_inline_bytes") -> int:
        """The limit for the tool exposed as `name`."""
        found = self._found.get((name, key))
        if found is None:
            if len(self._found) >= MATCHES_KEPT:  # names come from clients: keep the memo bounded
                self._found.clear()
            found = self._found[(name, key)] = self._match(name, key)
        return found

    def widest(self) -> int:
        """The largest inline limit any tool has."""
        overrides = (values.get("max_inline_bytes") for values in self.overrides.values())
        return max([self.max_inline_bytes, *(value for value in overrides if value is not None)])

    def _match(self, name: str, key: Key) -> int:
        for pattern, values in self.overrides.items():
            value = values.get(key)
            if value is not None and fnmatchcase(name, pattern):
                return value
        return self.max_inline_bytes if key == "max_inline_bytes" else self.max_request_bytes

    def spills(self, call: Call) -> bool:
        """Whether this call's result is over its inline limit (the size guard spills it)."""
        if call.error is not None or call.tool_result is None:
            return False
        if (call.server, call.tool) == ("gateway", "read_output"):
            # A page is already bounded (≤ MAX_PAGE_BYTES plus a header line); spilling it again would
            # answer "read more" with another spill notice, and the model could never get at the text.
            return False
        size = call.response_bytes()
        return size is not None and size > self.limit(call, "max_inline_bytes")
