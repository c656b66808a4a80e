"""`initialize`'s instructions say what each server offers (Codex reads them as the namespace's description), within
the 2,048 characters Codex keeps."""

from pathlib import Path

import mcp.types as types
import pytest
from mcp import Client

from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.middleware.exposure.offers import INSTRUCTIONS_CHARS, offers
from gateway.routing.catalog import Catalog, Entry
from tests.harness import write_config
from tests.servers.kitchen import Kitchen

pytestmark = pytest.mark.anyio


def catalog(servers: dict[str, list[str]]) -> Catalog:
    tools = {
        f"{server}.{name}": Entry(f"{server}.{name}", server, name, types.Tool(name=name, input_schema={}))
        for server, names in servers.items()
        for name in names
    }
    return Catalog(tools=tools)


def test_each_server_is_a_line_with_its_tool_count_and_the_objects_its_tools_act_on() -> None:
    gitlab = ["list_merge_requests", "create_merge_request", "get_pipeline", "list_pipelines", "get_issue"]
    text = offers(catalog({"gitlab": gitlab, "time": ["get_current_time"], "gateway": ["status"]}), 2_000)
    lines = text.splitlines()
    assert lines[0] == "Servers behind this gateway:"
    assert lines[1] == "- gitlab: 5 tools (merge, request, pipeline, issue)"
    assert lines[2] == "- time: 1 tool (current)"
    assert "- gateway" not in text  # the gateway's own tools are not a server the client needs told about


def test_servers_that_do_not_fit_are_counted_not_cut() -> None:
    many = {f"server{n:03}": [f"tool_{n}_thing"] for n in range(200)}
    text = offers(catalog(many), 500)
    assert len(text) <= 500 and text.splitlines()[-1].startswith("- and ") and "more servers" in text


async def test_initialize_instructions_end_with_what_each_server_offers_within_codex_s_cap(tmp_path: Path) -> None:
    config = write_config(tmp_path, {})
    kitchen = Kitchen("k", None, 0, [f"tool_{n}" for n in range(30)])
    gateway = Gateway(load_config(config), in_process={"k": lambda: kitchen.server})
    info = types.Implementation(name="codex-mcp-client", version="0.146.0")
    async with gateway.running(), Client(gateway.front.server, mode="legacy", client_info=info) as client:
        instructions = client.instructions
    assert instructions is not None and len(instructions) <= INSTRUCTIONS_CHARS
    assert instructions.startswith("Driver ") and "\nServers behind this gateway:\n- k: " in instructions
