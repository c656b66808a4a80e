"""FastMCP's proxy as a benchmark peer: one downstream (a stdio command or a Streamable HTTP URL) served on
stdio or on Streamable HTTP.

Runs with the FastMCP bench environment's Python (`bench._peer_envs`), never the project's: FastMCP is
not a dependency. Usage: `python bench/peer_fastmcp.py (--stdio | --port PORT) (--url URL | -- COMMAND ARGS...)`.
The backend is one connected `Client`, so every call reuses its session (FastMCP's default for any other
target opens a fresh backend session, and with stdio a fresh process, per request).
"""

import argparse
import logging
import sys
from typing import Any

import anyio


async def serve(args: argparse.Namespace) -> None:
    from fastmcp import Client  # type: ignore[import-not-found,unused-ignore]
    from fastmcp.client.transports import (  # type: ignore[import-not-found,unused-ignore]
        StdioTransport,
        StreamableHttpTransport,
    )
    from fastmcp.server import create_proxy  # type: ignore[import-not-found,unused-ignore]

    command: list[str] = args.command
    transport: Any = (
        StreamableHttpTransport(args.url) if args.url else StdioTransport(command=command[0], args=command[1:])
    )
    # Its one-time notice about reusing a connected client is the point here, not news: keep stderr quiet.
    logging.getLogger("fastmcp").setLevel(logging.ERROR)
    async with Client(transport) as backend:
        proxy = create_proxy(backend, name="fastmcp-proxy")
        if args.stdio:
            await proxy.run_async(transport="stdio", show_banner=False, log_level="WARNING")
        else:
            await proxy.run_async(
                transport="http", show_banner=False, host="127.0.0.1", port=args.port, log_level="WARNING"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    front = parser.add_mutually_exclusive_group(required=True)
    front.add_argument("--stdio", action="store_true", help="serve on this process's stdin/stdout")
    front.add_argument("--port", type=int, help="serve Streamable HTTP at http://127.0.0.1:PORT/mcp")
    parser.add_argument("--url", help="the downstream's Streamable HTTP URL (else COMMAND ARGS after --)")
    parser.add_argument("command", nargs="*")
    args = parser.parse_args(argv)
    if not args.url and not args.command:
        parser.error("name a downstream: --url URL or -- COMMAND ARGS")
    anyio.run(serve, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
