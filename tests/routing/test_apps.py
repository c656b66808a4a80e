"""MCP Apps relayed: the extension's own reference servers (`@modelcontextprotocol/server-*` from the ext-apps
examples, installed pinned under .node/ by scripts/node-tools) behind the gateway, and a client that does what a
host does: lists the tool, reads its `ui://` resource through the gateway, and calls the app's own tools.

* server-system-monitor: `get-system-info` with its UI resource in both forms (`_meta.ui.resourceUri` and the
  deprecated flat `_meta["ui/resourceUri"]`), and the app-only `poll-system-stats` (`visibility: ["app"]`) its
  app calls by that name;
* server-map: the resource's `_meta.ui.csp`; server-transcript: its `_meta.ui.permissions`.
"""

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.server import Server, ServerRequestContext

from gateway.routing.apps import exposed_meta, own_names
from gateway.routing.catalog import Entry
from gateway.routing.uris import Uris
from tests.harness import ROOT, connected, write_config

pytestmark = pytest.mark.anyio

NODE = ROOT / ".node" / "node_modules"
APP_MIME = "text/html;profile=mcp-app"
SYSMON_UI = "ui://system-monitor/mcp-app.html"


def _example(package: str) -> dict[str, Any]:
    """A stdio server entry running one of the extension's reference servers on the lab's Node."""
    server = NODE / "@modelcontextprotocol" / package / "dist" / "index.js"
    if not server.exists():
        raise AssertionError(f"{server} is missing: run ./scripts/setup-lab (it calls scripts/node-tools)")
    return {"transport": "stdio", "command": str(NODE / ".bin" / "node"), "args": [str(server), "--stdio"]}


SERVERS = {
    "sysmon": _example("server-system-monitor"),
    "map": _example("server-map"),
    "transcript": _example("server-transcript"),
}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Client]:
    config = write_config(tmp_path_factory.mktemp("apps"), SERVERS)
    async with connected(config) as (_gateway, client):
        yield client


async def _direct(name: str, uri: str) -> types.ReadResourceResult:
    entry = SERVERS[name]
    params = StdioServerParameters(command=entry["command"], args=entry["args"])
    async with Client(stdio_client(params)) as client:
        return await client.read_resource(uri)


def _tool(tools: types.ListToolsResult, name: str) -> types.Tool:
    return next(t for t in tools.tools if t.name == name)


async def test_a_tools_ui_resource_is_listed_under_a_ui_uri_the_gateway_serves_in_both_forms(gateway: Client) -> None:
    tool = _tool(await gateway.list_tools(), "sysmon.get-system-info")
    assert tool.meta == {
        "ui": {"resourceUri": "ui://sysmon+system-monitor/mcp-app.html"},
        "ui/resourceUri": "ui://sysmon+system-monitor/mcp-app.html",
    }
    listed = {r.uri: r for r in (await gateway.list_resources()).resources}
    assert listed["ui://sysmon+system-monitor/mcp-app.html"].mime_type == APP_MIME


async def test_the_host_reads_the_rewritten_uri_and_gets_the_servers_html_unchanged(gateway: Client) -> None:
    uri = _tool(await gateway.list_tools(), "sysmon.get-system-info").meta["ui"]["resourceUri"]  # type: ignore[index]
    through = (await gateway.read_resource(uri)).contents
    direct = (await _direct("sysmon", SYSMON_UI)).contents
    assert len(through) == len(direct) == 1
    assert isinstance(through[0], types.TextResourceContents) and isinstance(direct[0], types.TextResourceContents)
    assert through[0].uri == uri
    assert through[0].mime_type == APP_MIME
    assert through[0].text == direct[0].text and through[0].text.lstrip().lower().startswith("<!doctype html")


@pytest.mark.parametrize(
    ("server", "tool", "original"),
    [("map", "map.show-map", "ui://cesium-map/mcp-app.html"), ("transcript", "transcript.transcribe", None)],
)
async def test_csp_and_permissions_of_the_resource_pass_unchanged(
    gateway: Client, server: str, tool: str, original: str | None
) -> None:
    uri = _tool(await gateway.list_tools(), tool).meta["ui"]["resourceUri"]  # type: ignore[index]
    through = (await gateway.read_resource(uri)).contents[0]
    direct = (await _direct(server, original or "ui://transcript/mcp-app.html")).contents[0]
    assert through.meta is not None and through.meta == direct.meta
    assert through.mime_type == direct.mime_type == APP_MIME


async def test_app_only_tools_are_listed_with_their_visibility_as_the_server_sent_it(gateway: Client) -> None:
    tool = _tool(await gateway.list_tools(), "sysmon.poll-system-stats")
    assert tool.meta == {"ui": {"visibility": ["app"]}}  # the host hides it from its model, not the gateway


async def test_the_apps_own_tool_call_by_its_servers_name_reaches_its_server(gateway: Client) -> None:
    # The system monitor's app polls with callServerTool({name: "poll-system-stats"}); the host forwards it as is.
    result = await gateway.call_tool("poll-system-stats", {})
    assert not result.is_error, result.content
    assert result.structured_content is not None and {"memory", "uptime"} <= set(result.structured_content)


async def test_the_models_call_of_the_tool_renders_with_the_resource_it_names(gateway: Client) -> None:
    result = await gateway.call_tool("sysmon.get-system-info", {})
    assert not result.is_error, result.content
    assert result.structured_content is not None and "hostname" in result.structured_content


def _dashboard() -> Server[Any]:
    """An Apps server whose tool *result* names its UI resource (as some servers do, beside the listing)."""
    tool = types.Tool(name="show", input_schema={"type": "object"}, _meta={"ui": {"resourceUri": "ui://dash/app.html"}})

    async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool])

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        meta = {
            "ui": {"resourceUri": "ui://dash/app.html", "prefersBorder": False},
            "ui/resourceUri": "ui://dash/app.html",
        }
        return types.CallToolResult(content=[types.TextContent(text="shown")], _meta=meta)

    return Server("dash", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def test_a_tool_result_naming_its_ui_resource_names_the_uri_the_gateway_serves(tmp_path: Path) -> None:
    config = write_config(tmp_path, {}, bootstrap={"mode": "off"})
    async with connected(config, in_process={"dash": _dashboard}) as (_gateway, client):
        result = await client.call_tool("dash.show", {})
    assert result.meta == {
        "ui": {"resourceUri": "ui://dash+dash/app.html", "prefersBorder": False},
        "ui/resourceUri": "ui://dash+dash/app.html",
    }


def _gated() -> Server[Any]:
    """An Apps server that lists its UI tool only to a client declaring the extension, as the spec says it SHOULD."""

    async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        declared = (ctx.session.client_capabilities or types.ClientCapabilities()).extensions or {}
        ui = declared.get("io.modelcontextprotocol/ui") or {}
        meta = {"ui": {"resourceUri": "ui://gated/app.html"}} if APP_MIME in ui.get("mimeTypes", []) else None
        return types.ListToolsResult(tools=[types.Tool(name="show", input_schema={"type": "object"}, _meta=meta)])

    return Server("gated", version="1.0", on_list_tools=list_tools)


async def test_servers_that_check_the_clients_apps_support_see_the_gateway_declare_it(tmp_path: Path) -> None:
    # The gateway relays Apps whole, so it declares the extension to its servers; a client that renders no UI gets
    # the text every Apps tool must also return.
    async with connected(write_config(tmp_path, {}), in_process={"gated": _gated}) as (_gateway, client):
        tool = _tool(await client.list_tools(), "gated.show")
    assert tool.meta == {"ui": {"resourceUri": "ui://gated+gated/app.html"}}


# -- the rewriting and the own names, in process ---------------------------------------------------------------

URIS = Uris({"sysmon", "other"})


def test_a_tool_result_carrying_a_ui_resource_is_rewritten_and_every_other_key_kept() -> None:
    ui: dict[str, Any] = {
        "resourceUri": "ui://dash/app.html",
        "visibility": ["model", "app"],
        "csp": {"connectDomains": ["https://api.example.com"]},
        "permissions": {"camera": {}},
        "domain": "a904794854a047f6.claudemcpcontent.com",
        "prefersBorder": True,
    }
    meta: dict[str, Any] = {"ui": ui, "ui/resourceUri": "ui://dash/app.html", "viewUUID": "7"}
    out = exposed_meta("sysmon", meta, URIS)
    assert out == {
        **meta,
        "ui": {**ui, "resourceUri": "ui://sysmon+dash/app.html"},
        "ui/resourceUri": "ui://sysmon+dash/app.html",
    }
    assert meta["ui/resourceUri"] == ui["resourceUri"] == "ui://dash/app.html"  # the server's own is not mutated
    assert exposed_meta("sysmon", {"viewUUID": "7"}, URIS) == {"viewUUID": "7"}


def _entry(server: str, name: str, meta: dict[str, Any] | None = None) -> Entry:
    tool = types.Tool(name=name, input_schema={"type": "object"}, _meta=meta)
    return Entry(f"{server}.{name}", server, name, tool)


def test_own_names_cover_the_tools_an_app_may_call_on_apps_servers_only() -> None:
    entries = [
        _entry("sysmon", "get-system-info", {"ui": {"resourceUri": "ui://s/app.html"}}),
        _entry("sysmon", "poll", {"ui": {"visibility": ["app"]}}),
        _entry("sysmon", "model-only", {"ui": {"visibility": ["model"]}}),
        _entry("sysmon", "plain"),
        _entry("files", "read"),
        _entry("legacy", "show", {"ui/resourceUri": "ui://l/app.html"}),
    ]
    assert own_names(entries) == {
        "get-system-info": "sysmon.get-system-info",
        "poll": "sysmon.poll",
        "plain": "sysmon.plain",
        "show": "legacy.show",
    }


def test_an_own_name_two_apps_servers_share_answers_to_neither() -> None:
    ui = {"ui": {"resourceUri": "ui://x/app.html"}}
    assert own_names([_entry("a", "refresh", ui), _entry("b", "refresh", ui)]) == {}


def test_an_own_name_that_is_another_tools_exposed_name_stays_that_tool() -> None:
    bare = Entry("refresh", "plain", "refresh", types.Tool(name="refresh", input_schema={"type": "object"}))
    assert own_names([_entry("a", "refresh", {"ui": {"visibility": ["app"]}}), bare]) == {}
