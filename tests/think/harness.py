"""What the Think tests share: the fixture workflows, in-process gateways serving them, and a naive driver."""

import json
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp import Client

from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.session import os_user
from gateway.store.base import owned
from tests.harness import ROOT, hints_of, kitchen, text_of, write_config

FIXTURES = ROOT / "tests" / "fixtures" / "workflows"


def runs_folder(state_dir: Path, workflow: str) -> Path:
    """Where the local backend keeps the runs of `workflow` planned by an in-process client (the stdio front's
    user: the OS user)."""
    return state_dir / owned(os_user().owner, workflow)


@asynccontextmanager
async def think_client(tmp_path: Path, *, max_inline_bytes: int = 1_000_000, **think: Any) -> AsyncIterator[Client]:
    """An in-process gateway (no downstream servers) serving the fixture workflows, and a client on it."""
    think = {"workflows_dirs": [str(FIXTURES)], "state_dir": "state", **think}
    config = write_config(tmp_path, {}, think=think, limits={"max_inline_bytes": max_inline_bytes})
    gateway = Gateway(load_config(config))
    with anyio.fail_after(30):
        async with gateway.running(), Client(gateway.front.server, mode="legacy") as client:
            yield client


@asynccontextmanager
async def gateway_on(
    tmp_path: Path, workflows: dict[str, str], servers: dict[str, Any] | None = None, **think: Any
) -> AsyncIterator[Client]:
    """An in-process gateway with `servers` (default: the kitchen server as `k`), serving `workflows` (name -> YAML)
    only; `think`: more keys of the think section."""
    folder = tmp_path / "workflows"
    folder.mkdir(exist_ok=True)
    for name, text in workflows.items():
        (folder / f"{name}.yaml").write_text(textwrap.dedent(text), encoding="utf-8")
    think = {"workflows_dirs": [str(folder)], "state_dir": str(tmp_path / "state"), **think}
    servers = {"k": kitchen("k")} if servers is None else servers
    config = write_config(tmp_path, servers, think=think, limits={"max_inline_bytes": 1_000_000})
    gateway = Gateway(load_config(config))
    with anyio.fail_after(60):
        async with gateway.running(), Client(gateway.front.server, mode="legacy") as client:
            yield client


def body_of(result: types.CallToolResult) -> dict[str, Any]:
    assert not result.is_error, text_of(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def failure(result: types.CallToolResult, code: str) -> dict[str, Any]:
    assert result.is_error, text_of(result)
    body: dict[str, Any] = json.loads(text_of(result))
    assert body["error"] == code, body
    return body


async def run_naively(client: Client, workflow: str, params: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Follow every instruction by making its call through the gateway and never sending a result_snapshot."""
    ins = body_of(await client.call_tool("think.plan", {"workflow": workflow, "params": params}))
    taken: list[str] = []
    while not ins["done"]:
        taken.append(ins["step_id"])
        result = await client.call_tool(ins["call"], ins["input"])
        recorded = f"[gateway] Step `{ins['step_id']}` of run {ins['run_id']} recorded by the gateway."
        assert any(h.startswith(recorded) for h in hints_of(result)), (ins["step_id"], hints_of(result))
        ref = {"workflow": workflow, "run_id": ins["run_id"], "step_id": ins["step_id"]}
        ins = body_of(await client.call_tool("think.next", ref))
    return ins, taken


async def past_driver(client: Client, ins: dict[str, Any]) -> dict[str, Any]:
    """The first instruction after the injected driver steps (made through the gateway, recorded by it)."""
    while not ins["done"] and ins["step_id"].startswith("__driver_"):
        await client.call_tool(ins["call"], ins["input"])
        ref = {"workflow": ins["workflow"], "run_id": ins["run_id"], "step_id": ins["step_id"]}
        ins = body_of(await client.call_tool("think.next", ref))
    return ins
