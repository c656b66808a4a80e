"""`gateway prepare` and the `package:`/`npm:` lines of `gateway check`: the servers' own environments, installed
ahead of time and reported on, server by server (`gateway.downstreams.envs` does the work)."""

import sys
from pathlib import Path

import anyio

from gateway.config import GatewayConfig, StdioServerConfig
from gateway.config.bundled import envs_home
from gateway.downstreams import installers
from gateway.downstreams.envs import Env, Prepared
from gateway.errors import PrepareFailed


def environments(config: GatewayConfig, home: Path | None = None) -> dict[str, Env]:
    """The servers given by `package` or `npm`, by name, with the environment each runs in (under `home`,
    default `bundled.envs_home()`)."""
    home = home or envs_home()
    found = {
        name: Env.of(name, server, home)
        for name, server in config.servers.items()
        if isinstance(server, StdioServerConfig)
    }
    return {name: env for name, env in found.items() if env is not None}


def _say(line: str, *, error: bool = False) -> None:
    print(line, file=sys.stderr if error else sys.stdout, flush=True)


async def prepare(config: GatewayConfig, path: Path, names: list[str], force: bool = False) -> int:
    """Install the environments of the servers `names` (default: all that have one), check the prepared ones and
    reinstall the broken ones (all of them with `force`); prints what it did. Returns 1 when one failed (the others
    are still installed), 2 when a name is not such a server."""
    every = environments(config)
    unknown = [name for name in names if name not in every]
    if unknown:
        have = ", ".join(every) or "none"
        _say(
            f"{path}: {', '.join(map(repr, unknown))}: no server with package or npm by that name (they are: {have})",
            error=True,
        )
        return 2
    chosen = {name: every[name] for name in names} if names else every
    if not chosen:
        _say(f"{path}: no server has package or npm; nothing to prepare")
        return 0
    # Servers sharing one pinned spec share its folder: it is installed once, then reported for each.
    by_root: dict[Path, list[Env]] = {}
    for env in chosen.values():
        by_root.setdefault(env.root, []).append(env)
    failed: list[str] = []

    async def one(envs: list[Env]) -> None:
        for number, env in enumerate(envs):
            try:
                done = await env.prepare(force=force and number == 0)  # one rebuild per shared folder
                unit = "files" if env.kind == "pypi" else "npm packages"
                _say(f"{path}: servers.{env.server}: {env.label} {_what(done, unit)}: {env.command()}")
            except PrepareFailed as exc:
                failed.append(env.server)
                _say(f"{path}: servers.{env.server}: error: {exc}", error=True)

    async with anyio.create_task_group() as tg:
        for envs in by_root.values():
            tg.start_soon(one, envs)
    return 1 if failed else 0


def _what(done: Prepared, unit: str) -> str:
    took = f"with {done.tool} in {done.seconds:.1f} s"
    if done.reused:
        return f"already prepared and intact ({done.checked} {unit} checked), nothing installed"
    if done.forced:
        return f"rebuilt (--force) {took}"
    if done.repaired:
        return f"was broken ({done.repaired}); reinstalled {took}"
    return f"installed {took}"


def check(config: GatewayConfig, path: Path) -> None:
    """Per `package`/`npm` server: prepared, or what is missing and the command that fixes it."""
    for name, env in environments(config).items():
        fix = f"gateway prepare --config {path} {name}"
        missing = installers.missing_tool(env.kind)
        if missing is not None:
            _say(f"{path}: servers.{name}: warning: {env.label}: {missing}; then run: {fix}", error=True)
        elif env.ready() and not env.check().problems:
            _say(f"{path}: servers.{name}: {env.label} prepared in {env.root}")
        elif env.ready():
            _say(f"{path}: servers.{name}: warning: {env.label} is broken ({env.broken()}); now: {fix}", error=True)
        else:
            _say(f"{path}: servers.{name}: {env.label} not prepared (serve installs it on first use); now: {fix}")
