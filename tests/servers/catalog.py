"""Versions-catalog MCP test server (stdio): one tool, `list_versions`, answering a `name -> [versions]` JSON text.

Modes for the gateway's version-source tests: `--data FILE` serves that file's JSON (re-read on every
call, so a test can change the catalog between fetches, or serve a wrong shape), `--fail` answers with
an `isError` result, `--garbage` with text that is not JSON. `--events-file` gets `call list_versions`
per call, so tests can count fetches.
"""

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any, TextIO

import anyio
import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

Ctx = ServerRequestContext[Any]
DEFAULT: dict[str, list[str]] = {"bun": ["1.1.34", "1.2"], "nodejs": ["18", "20", "22"], "postgresql": ["16"]}
LIST_VERSIONS = types.Tool(
    name="list_versions",
    description="Live catalog of valid versions: a JSON object mapping each name to its versions.",
    input_schema={"type": "object", "properties": {}},
)


def text_result(text: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=is_error)


class Catalog:
    def __init__(self, data: Path | None, mode: str, events_path: str | None) -> None:
        self.data = data
        self.mode = mode
        self.events: TextIO | None = open(events_path, "a", encoding="utf-8") if events_path else None
        self.server: Server[Any] = Server(
            "catalog", version="1.0", on_list_tools=self.list_tools, on_call_tool=self.call_tool
        )

    def event(self, line: str) -> None:
        if self.events is not None:
            self.events.write(line + "\n")
            self.events.flush()

    def mapping(self) -> object:
        if self.data is None:
            return DEFAULT
        loaded: object = json.loads(self.data.read_text(encoding="utf-8"))
        return loaded

    async def list_tools(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[LIST_VERSIONS])

    async def call_tool(self, ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        self.event(f"call {params.name}")
        if params.name != LIST_VERSIONS.name:
            return text_result(f"Unknown tool: {params.name}", is_error=True)
        if self.mode == "fail":
            return text_result("catalog backend unavailable", is_error=True)
        if self.mode == "garbage":
            return text_result("<html>502 Bad Gateway</html>")
        return text_result(json.dumps(self.mapping()))


async def serve(catalog: Catalog) -> None:
    async with stdio_server() as (read, write):
        await catalog.server.run(read, write, catalog.server.create_initialization_options())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, help="JSON file served instead of the built-in catalog")
    parser.add_argument("--events-file")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--fail", dest="mode", action="store_const", const="fail", help="answer with isError")
    modes.add_argument("--garbage", dest="mode", action="store_const", const="garbage", help="answer non-JSON text")
    parser.set_defaults(mode="ok")
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s: %(message)s")
    catalog = Catalog(args.data, args.mode, args.events_file)
    catalog.event(f"started {os.getpid()}")
    anyio.run(serve, catalog)


if __name__ == "__main__":
    main()
