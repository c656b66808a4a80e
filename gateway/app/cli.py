"""Command line: `gateway serve | check | prepare | tools | init | connect | reload`. Parses arguments and
delegates; no logic."""

import argparse
import importlib.util
import json
import logging
import os
import shutil
import sys
from contextlib import suppress
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio

from gateway import __version__
from gateway.app import prepare as packages
from gateway.app.connect import CLIENTS
from gateway.config import GatewayConfig, StdioServerConfig, load_config
from gateway.config.bundled import default_config
from gateway.errors import ConfigError

logger = logging.getLogger("gateway")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gateway", description="One MCP endpoint in front of many MCP servers.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__} (mcp-doorway)")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve MCP on stdio (default) or Streamable HTTP")
    serve.add_argument("--config", type=Path, help="the config file (default: the embedded one)")
    serve.add_argument(
        "--http", metavar="HOST:PORT", type=_address, help="serve Streamable HTTP at /mcp (and legacy SSE at /sse)"
    )
    serve.add_argument(
        "--ui", metavar="HOST:PORT", type=_address, help="beside a stdio session: the page at /ui and /metrics"
    )
    serve.add_argument("--log-level", default="INFO", type=str.upper, choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    check = sub.add_parser("check", help="validate a config file")
    check.add_argument("--config", type=Path, help="the config file (default: the embedded one)")
    check.add_argument("--as", dest="identity", metavar="IDENTITY", help="start the servers; print what it would see")
    check.add_argument("--groups", default="", help="with --as: its groups, comma-separated (JWT identities)")
    prepare = sub.add_parser("prepare", help="install the package: and npm: servers' environments now")
    prepare.add_argument("--config", type=Path, help="the config file (default: the embedded one)")
    prepare.add_argument("servers", nargs="*", metavar="SERVER", help="only these servers (default: all)")
    prepare.add_argument("--force", action="store_true", help="rebuild them even when intact")
    reload = sub.add_parser("reload", help="make a running HTTP gateway reload its config file")
    reload.add_argument("--url", required=True, help="the gateway's base URL, e.g. http://127.0.0.1:8765")
    reload.add_argument("--token-env", default="GATEWAY_TOKEN", help="variable holding a bearer token, if it needs one")
    tools = sub.add_parser("tools", help="start the servers and print the namespaced tool catalog")
    tools.add_argument("--config", type=Path, help="the config file (default: the embedded one)")
    tools.add_argument("--json", action="store_true", help="machine-readable output")
    tools.add_argument("--find", metavar="QUERY", help="try gateway.find_tools with this query instead")
    tools.add_argument("--limit", type=_count, default=5, help="hits to show with --find (default 5)")
    init = sub.add_parser("init", help="write an editable starter config and the shipped workflows into DIR")
    init.add_argument("dir", nargs="?", default=Path("."), type=Path, metavar="DIR")
    connect = sub.add_parser("connect", help="print (or --write) the config snippet a client needs for this gateway")
    connect.add_argument("client", choices=sorted(CLIENTS))
    connect.add_argument("--config", type=Path, help="the config the client's gateway serves (default: embedded)")
    connect.add_argument(
        "--http", metavar="URL", type=_url, help="reach a running gateway at URL (…/mcp) instead of stdio"
    )
    connect.add_argument("--name", default="gateway", help="the server's name in the client (default: gateway)")
    connect.add_argument("--write", action="store_true", help="merge into the client's file, keeping the rest")
    connect.add_argument("--file", type=Path, help="with --write: that file instead of the client's usual one")
    login = sub.add_parser("login", help="sign in to an OAuth-protected server (auth: {type: oauth}) as yourself")
    login.add_argument("server")
    login.add_argument("--config", type=Path, help="the config file (default: the embedded one)")
    login.add_argument("--no-browser", action="store_true", help="print the link only")
    logout = sub.add_parser("logout", help="forget your tokens for an OAuth-protected server")
    logout.add_argument("server")
    logout.add_argument("--config", type=Path, help="the config file (default: the embedded one)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    level = getattr(args, "log_level", "WARNING")
    logging.basicConfig(level=level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.command == "reload":
        from gateway.app.reload import request_reload

        return request_reload(args.url, os.environ.get(args.token_env))
    if args.command == "init":
        from gateway.app.init import init

        return init(args.dir)
    if args.command == "connect":
        from gateway.app.connect import connect

        return connect(args.client, config=args.config, url=args.http, name=args.name, write=args.write, file=args.file)
    if args.config is None:
        args.config = default_config()
    try:
        config = load_config(args.config, unset_ok=args.command == "prepare")  # installs need no credentials
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"{exc.source}: {problem}", file=sys.stderr)  # noqa: T201 -- the CLI's output
        return 1
    match args.command:
        case "check" if args.identity is not None:
            groups = {g.strip() for g in args.groups.split(",") if g.strip()}
            from gateway.app.reach import check_as

            return anyio.run(check_as, config, args.identity, groups)
        case "check":
            return _check(config, args.config)
        case "prepare":
            return anyio.run(packages.prepare, config, args.config, args.servers, args.force)
        case "tools":
            return anyio.run(_tools, config, args.json, args.find, args.limit)
        case "login":
            from gateway.app.login import login

            return anyio.run(partial(login, config, args.server, browse=not args.no_browser))
        case "logout":
            from gateway.app.login import logout

            return anyio.run(logout, config, args.server)
        case _:
            return _serve(config, args.config, args.http, args.ui)


def _check(config: GatewayConfig, path: Path) -> int:
    from gateway.downstreams.secrets import references

    for name, server in config.servers.items():
        needs = references(server)
        if needs:
            sources = ", ".join(config.secrets.sources)
            print(f"{path}: servers.{name}: per-user ({', '.join(sorted(needs))}; sources: {sources})")  # noqa: T201
        own = isinstance(server, StdioServerConfig) and server.package is None and server.npm is None
        command = server.command if isinstance(server, StdioServerConfig) and own else None
        if command is not None and shutil.which(command) is None:
            # A warning, not an error: the command may be installed where the gateway will run.
            print(f"{path}: servers.{name}.command: warning: {command!r} is not on PATH here", file=sys.stderr)  # noqa: T201
    packages.check(config, path)  # `package:`/`npm:` servers: prepared, or what is missing and the fix
    if config.think.enabled:
        from gateway.think.library import Library
        from gateway.think.workflow import DEFAULT_DIR

        dirs = (
            [Path(d) for d in config.think.workflows_dirs] if config.think.workflows_dirs is not None else [DEFAULT_DIR]
        )
        # Warnings: one broken workflow does not stop the gateway (think.workflows.list reports it too).
        for error in Library(dirs).all()[1]:
            for problem in error.details if isinstance(error.details, list) else [error.details]:
                print(f"{path}: think.workflows_dirs: warning: {problem}", file=sys.stderr)  # noqa: T201
    print(f"{path}: ok ({len(config.servers)} servers: {', '.join(config.servers)})")  # noqa: T201
    return 0


async def _tools(config: GatewayConfig, as_json: bool, query: str | None, limit: int) -> int:
    from gateway.app.gateway import Gateway
    from gateway.middleware.exposure import figures

    gateway = Gateway(config)
    async with gateway.running():
        catalog = await gateway.registry.catalog()
        status = gateway.registry.status()
    if query is not None:
        try:
            print("\n".join(figures.find_lines(gateway.exposure, catalog, query, max(1, limit))))  # noqa: T201
        except ValueError as exc:
            print(f"--find: {exc}", file=sys.stderr)  # noqa: T201
            return 1
        return 0
    exposure = figures.rows(gateway.exposure, catalog)
    rows: list[dict[str, Any]] = [
        {
            "name": e.exposed,
            "server": e.server,
            "original": e.original,
            "chars": len(e.item.model_dump_json(by_alias=True, exclude_none=True)),
        }
        for e in catalog.tools.values()
    ]
    total = sum(r["chars"] for r in rows)
    if as_json:
        body = {"tools": rows, "total_tools": len(rows), "total_chars": total, "exposure": exposure, "servers": status}
        print(json.dumps(body, indent=1))  # noqa: T201
        return 0
    width = max([len(r["name"]) for r in rows] + [4])
    lines = [f"{'NAME':<{width}}  {'SERVER':<12}  {'ORIGINAL':<32}  CHARS"]
    lines += [f"{r['name']:<{width}}  {r['server']:<12}  {r['original']:<32}  {r['chars']:>5}" for r in rows]
    lines.append(f"{len(rows)} tools, {total:,} chars of definitions")
    lines += ["", *figures.render(exposure), ""]
    lines += [
        f"server {n}: {s['state']}" + (f" ({s['last_error']})" if s["last_error"] else "") for n, s in status.items()
    ]
    print("\n".join(lines))  # noqa: T201
    return 0


def _has_uvloop() -> bool:
    return importlib.util.find_spec("uvloop") is not None


Address = tuple[str | None, int]


def _address(text: str) -> Address:
    """`--http`/`--ui`'s HOST:PORT: HOST may be left out (the config's `listen.host`), an IPv6 one in brackets."""
    host, colon, port = text.rpartition(":")
    if not colon or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT with a port from 0 to 65535 (127.0.0.1:8765)")
    return host or None, int(port)


def _url(text: str) -> str:
    """`connect --http`'s URL: the client will be given it as it is, so it must be one."""
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"{text!r} is not an http(s) URL of a gateway (http://127.0.0.1:8765/mcp)")
    return text


def _count(text: str) -> int:
    if not text.isdigit() or int(text) == 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number above 0")
    return int(text)


def _serve(config: GatewayConfig, path: Path, http: Address | None, ui: Address | None) -> int:
    from gateway import telemetry
    from gateway.app import serve

    if http is not None and ui is not None:
        print("--ui is for a stdio session; with --http the page is at /ui already.", file=sys.stderr)  # noqa: T201
        return 2
    with telemetry.exporting(config.telemetry), suppress(KeyboardInterrupt):
        if http is None:
            beside = None if ui is None else (ui[0] or config.listen.host, ui[1])
            run = partial(serve.stdio, config, path=path, ui=beside)
            anyio.run(run, backend_options={"use_uvloop": _has_uvloop()})
        else:
            return serve.http(config, http[0] or config.listen.host, http[1], path=path)
    return 0
