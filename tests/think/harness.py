"""What the Think tests share: the fixture workflows and an in-process gateway serving them."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from gateway.app import Gateway
from gateway.config import load_config
from tests.harness import ROOT, write_config

FIXTURES = ROOT / "tests" / "fixtures" / "workflows"


@asynccontextmanager
async def think_client(tmp_path: Path, *, max_inline_bytes: int = 1_000_000, **think: Any) -> AsyncIterator[Client]:
    """An in-process gateway (no downstream servers) serving the fixture workflows, and a client on it."""
    think = {"workflows_dirs": [str(FIXTURES)], "state_dir": "state", **think}
    config = write_config(tmp_path, {}, think=think, limits={"max_inline_bytes": max_inline_bytes})
    gateway = Gateway(load_config(config))
    with anyio.fail_after(30):
        async with gateway.running(), Client(gateway.front.server, mode="legacy") as client:
            yield client
