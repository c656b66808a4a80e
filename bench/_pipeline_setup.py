"""Shared set-up of bench.pipeline_cost: the realistic config, the empty-chain gateway, constants."""

import json
from pathlib import Path
from typing import Any

import mcp.types as types

from bench._processes import TIMEOUT_S, gateway_stdio
from gateway.config import LimitsConfig, StdioServerConfig
from tests.harness import kitchen, write_config

TARGET = 1.2
"""Full chain p50 over empty chain p50, in process."""
HANG_TIMEOUT_S = 60.0
"""For the calls that may get no answer at all (a message over max_message_bytes)."""
PING_INTERVAL_S = 0.05
DEFAULTS = LimitsConfig()
CATALOG = {"postgresql": ["14", "15", "16"], "nodejs": ["18", "20", "22"], "bun": ["1.1.34", "1.2"]}
STEERING_TEXT = "Next: if the text names a tool version, check it against the catalog before using it."


def realistic_config(directory: Path, limits: dict[str, Any] | None = None, events: Path | None = None) -> Path:
    """Kitchen as `k`, a steering rule and a file-backed version check on `k.*`, bootstrap summary."""
    directory.mkdir(parents=True)
    (directory / "versions.json").write_text(json.dumps(CATALOG), encoding="utf-8")
    sections: dict[str, Any] = {
        "steering": {"hints": [{"tools": ["k.*"], "on": "success", "text": STEERING_TEXT}]},
        "versions": {
            "catalogs": {"runtimes": {"source": {"type": "file", "path": "versions.json"}}},
            "checks": [{"catalog": "runtimes", "tools": ["k.*"], "scan": ["arguments", "result"]}],
        },
        "bootstrap": {"mode": "summary"},
    }
    if limits is not None:
        sections["limits"] = limits
    return write_config(directory, {"k": kitchen("k", events=events, timeout_s=TIMEOUT_S)}, **sections)


def empty_chain_stdio(config: Path) -> StdioServerConfig:
    """The stdio front with `chain=[]` (`bench._stdio_gateway`), started like `gateway_stdio` starts `gateway serve`."""
    real = gateway_stdio(config)
    args = ["-m", "bench._stdio_gateway", "--config", str(config), "--chain", "empty", "--log-level", "WARNING"]
    return real.model_copy(update={"args": args})


def first_text(result: types.CallToolResult) -> str:
    first = result.content[0] if result.content else None
    return first.text if isinstance(first, types.TextContent) else ""
