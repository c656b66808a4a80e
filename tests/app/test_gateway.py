"""The composition root: one gateway process wired from its config, reconfigured by a reload, its health told."""

import sys
from pathlib import Path

import pytest

from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.hosted.prompts import PromptNotFound
from gateway.middleware.audit import AuditFile
from tests.harness import connected, text_of, write_config
from tests.servers.kitchen import Kitchen

pytestmark = pytest.mark.anyio


def kitchen() -> Kitchen:
    return Kitchen("k", None, 0, [])


async def test_a_reload_whose_pipeline_cannot_be_built_changes_nothing(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, {}, audit={"path": str(tmp_path / "audit.jsonl")}))
    gateway = Gateway(config, in_process={"k": lambda: kitchen().server})
    broken = load_config(
        write_config(tmp_path, {}, audit={"path": str(tmp_path / "new.jsonl")}, bootstrap={"driver_version": "v404"})
    )
    async with connected(gateway) as (_, client):
        chain, sink = gateway.pipeline.chain, gateway.audit
        with pytest.raises(PromptNotFound):
            gateway.reconfigure(broken)
        assert gateway.config is config and gateway.pipeline.chain == chain and gateway.audit is sink
        assert gateway.front.server.instructions == client.instructions  # sessions from now on are told the same
        result = await client.call_tool("k.echo", {"text": "still served"})
    assert text_of(result) == "still served"
    assert isinstance(sink, AuditFile)
    assert '"server_tool":"echo"' in (tmp_path / "audit.jsonl").read_text(encoding="utf-8")


async def test_a_chain_given_to_the_constructor_stays_the_chain_across_reloads(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, {}))
    gateway = Gateway(config, chain=[], in_process={"k": lambda: kitchen().server})
    async with connected(gateway) as (_, client):
        retire = gateway.reconfigure(load_config(write_config(tmp_path, {}, policy={"rules": [{"deny": ["k.*"]}]})))
        await retire()
        assert gateway.pipeline.chain == []
        result = await client.call_tool("k.echo", {"text": "no chain, no policy"})
    assert text_of(result) == "no chain, no policy"


async def test_health_is_degraded_and_names_the_server_whose_command_cannot_start(tmp_path: Path) -> None:
    missing = {"transport": "stdio", "command": sys.executable, "args": [str(tmp_path / "no-such-server.py")]}
    gateway = Gateway(load_config(write_config(tmp_path, {"gone": missing}, limits={"startup_wait_s": 5})))
    async with connected(gateway) as (_, client):
        report = gateway.health()
        await client.call_tool("gateway.status", {})
    assert report["status"] == "degraded" and report["servers"]["gone"]["state"] not in ("up", "idle")
    assert "died" not in report and "last_reload" not in report
