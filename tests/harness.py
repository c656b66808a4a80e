"""Shared test helpers: write configs, start the gateway for real (stdio or HTTP subprocess), connect clients."""

import io
import itertools
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import (
    AsyncExitStack,
    ExitStack,
    asynccontextmanager,
    chdir,
    contextmanager,
    redirect_stderr,
    redirect_stdout,
    suppress,
)
from pathlib import Path
from typing import Any
from unittest.mock import patch

import anyio
import httpx2
import mcp.types as types
import yaml
from anyio.abc import Process
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.downstreams.supervision import Target
from gateway.errors import GatewayError
from gateway.pipeline import Call
from gateway.session import Session
from tests.measured import HANDED

ROOT = Path(__file__).resolve().parent.parent
KITCHEN = str(ROOT / "tests" / "servers" / "kitchen.py")
PYTHON = sys.executable
LAB_ENVS = ROOT / ".envs"
"""The third-party servers' environments (the example config's `package:` entries), prepared by scripts/setup-lab
with `gateway prepare`: tests that run them set `GATEWAY_ENVS` here."""


def kitchen(name: str, *extra: str, events: Path | None = None, **fields: Any) -> dict[str, Any]:
    """A stdio server entry running the kitchen test server."""
    args = [KITCHEN, "--name", name, *extra]
    if events is not None:
        args += ["--events-file", str(events)]
    return {"transport": "stdio", "command": PYTHON, "args": args, **fields}


MEASURED = {k: v for k, v in os.environ.items() if k == "COVERAGE_PROCESS_CONFIG"}
"""A coverage run's settings, passed on to the gateways the tests start over stdio (an MCP client hands a server
only a safe few of its variables), so the code they run counts too."""


def unmeasured() -> dict[str, str]:
    """This process's environment without coverage's variable: a child that may not write files (a file-size limit,
    another user) would fail to save its coverage data and say so on stderr."""
    return {k: v for k, v in os.environ.items() if k != "COVERAGE_PROCESS_CONFIG"}


def cli(*args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`gateway ARGS` as a shell runs it, in this process (the command's `main`): its exit status and what it printed.
    For the commands that start nothing (`connect`, `check`), where a process per case only repeats the interpreter's
    start-up; `home`: HOME, and the folder it runs in."""
    from gateway.app.cli import main  # the command's own imports, for the tests that run it

    out, err = io.StringIO(), io.StringIO()
    with ExitStack() as stack:
        stack.enter_context(redirect_stdout(out))
        stack.enter_context(redirect_stderr(err))
        if home is not None:
            stack.enter_context(patch.dict(os.environ, HOME=str(home)))
            stack.enter_context(chdir(home))
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse refusing the arguments: the status a shell would see
            code = exc.code if isinstance(exc.code, int) else 1
    return subprocess.CompletedProcess(["gateway", *args], code, out.getvalue(), err.getvalue())


def write_config(directory: Path, servers: dict[str, Any], **sections: Any) -> Path:
    path = directory / "gateway.yaml"
    path.write_text(yaml.safe_dump({"servers": servers, **sections}), encoding="utf-8")
    return path


def gateway_command(args: list[str], env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """The argv and environment that run `gateway ARGS` in `env` (with PYTHONPATH added): under a coverage run,
    `python -m tests.measured ARGS`, measured from after its imports (see there), else `python -m gateway ARGS`."""
    environment = {**env, "PYTHONPATH": str(ROOT)}
    handed = environment.pop("COVERAGE_PROCESS_CONFIG", None)
    if handed is None:
        return [PYTHON, "-m", "gateway", *args], environment
    return [PYTHON, "-m", "tests.measured", *args], {**environment, HANDED: handed}


def gateway_params(config: Path, *, env: dict[str, str] | None = None) -> StdioServerParameters:
    argv, environment = gateway_command(
        ["serve", "--config", str(config), "--log-level", "WARNING"], {**MEASURED, **(env or {})}
    )
    return StdioServerParameters(command=argv[0], args=argv[1:], cwd=str(ROOT), env=environment)


def alias_bomb(indent: int = 0) -> str:
    """The issue's bomb: ten values, then six levels of ten aliases of the level below: 10^7 nodes in 339 bytes."""
    lines = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]" for p, n in itertools.pairwise("abcdefg")]
    return "".join(f"{' ' * indent}{line}\n" for line in lines)


BOMB_CONFIG = (
    "versions:\n  catalogs:\n    c:\n      source:\n        type: tool\n        tool: t.t\n        arguments:\n"
    + alias_bomb(10)
)
"""The bomb where the config takes any value (a tool source's arguments): unbounded, `gateway check` said ok
after 39 s and 300 MB."""


def _own_ports() -> range:
    """This test process's ports: a slice of its own (one per xdist worker) of those below the kernel's ephemeral
    range."""
    try:
        ephemeral = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text(encoding="ascii").split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral = 32_768  # Linux's default
    workers = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0) % workers
    span = max(1, (ephemeral - _FIRST_PORT) // workers)
    return range(_FIRST_PORT + worker * span, _FIRST_PORT + (worker + 1) * span)


_FIRST_PORT = 10_000
_PORTS = _own_ports()
_TURN = itertools.count()


def free_port() -> int:
    """A port for a server a test starts, free when asked and given to no other server of the suite's.

    Not one the kernel picks (bind to port 0): those come from its ephemeral range, from which every outgoing
    connection on the machine takes its local port too, so one could take it between this answer and the server's
    bind ("address already in use"). These are below that range, each xdist worker counting through a slice of its
    own, round and round; one in use (by anything) is skipped."""
    for _ in _PORTS:
        port = _PORTS[next(_TURN) % len(_PORTS)]
        with socket.socket() as s:
            # As servers bind: a port a closed server's connections still hold (TIME_WAIT) is as good as free.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {_PORTS.start}-{_PORTS.stop - 1}: every one is in use")


async def wait_for(predicate: Callable[[], bool], within_s: float = 20.0, what: str = "condition") -> None:
    """Poll `predicate` (a cheap check of another process's state) until true; fail after `within_s`."""
    try:
        with anyio.fail_after(within_s):
            while not predicate():  # noqa: ASYNC110 -- another process's files and pids offer no event
                await anyio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"{what}: not true within {within_s:g} s") from None


async def _healthy(url: str) -> bool:
    try:
        async with httpx2.AsyncClient(timeout=1) as http:
            return (await http.get(url)).status_code == 200
    except httpx2.HTTPError:
        return False


@asynccontextmanager
async def served(
    argv: list[str],
    ready: Callable[[], Awaitable[str | None]],
    what: str,
    *,
    quiet: bool = False,
    within_s: float = 30,
    **popen: Any,
) -> AsyncIterator[str]:
    """Run a server process; yields the base URL `ready()` gives once it is up, within `within_s` (`quiet`: drop
    its log)."""
    process = await anyio.open_process(argv, stdout=None, stderr=subprocess.DEVNULL if quiet else None, **popen)
    try:
        with anyio.fail_after(within_s):
            while (base := await ready()) is None:  # another process's files and sockets offer no event to wait on
                if process.returncode is not None:
                    raise RuntimeError(f"{what} exited with {process.returncode}")
                await anyio.sleep(0.05)
        yield base
    finally:
        await stop(process)


@asynccontextmanager
async def _gateway_started(
    config: Path, env: dict[str, str] | None, log: Path | None = None
) -> AsyncIterator[Callable[[], Awaitable[str]]]:
    """`gateway serve --http` started as a subprocess; yields what waits until /healthz answers (its base URL).
    `log`: its whole log, from INFO, goes to that file (else its warnings to the test's stderr)."""
    base = f"http://127.0.0.1:{free_port()}"
    level, stderr = ("WARNING", None) if log is None else ("INFO", log.open("ab"))
    argv, environment = gateway_command(
        ["serve", "--config", str(config), "--http", base.removeprefix("http://"), "--log-level", level],
        {**os.environ, **(env or {})},
    )
    try:
        process = await anyio.open_process(argv, stdout=None, stderr=stderr, cwd=str(ROOT), env=environment)
    finally:
        if stderr is not None:
            stderr.close()  # the process has its own

    async def up() -> str:
        with anyio.fail_after(30):
            while not await _healthy(f"{base}/healthz"):  # another process's socket offers no event to wait on
                if process.returncode is not None:
                    raise RuntimeError(f"gateway exited with {process.returncode}")
                await anyio.sleep(0.05)
        return base

    try:
        yield up
    finally:
        await stop(process)


@asynccontextmanager
async def http_gateway(
    config: Path, *, env: dict[str, str] | None = None, log: Path | None = None
) -> AsyncIterator[str]:
    """Run `gateway serve --http` as a subprocess; yields the base URL once /healthz answers (`log`: see
    `_gateway_started`)."""
    async with _gateway_started(config, env, log) as up:
        yield await up()


@asynccontextmanager
async def http_gateways(*configs: Path) -> AsyncIterator[list[str]]:
    """`http_gateway` for each config, started together: their start-ups (a second or two of CPU each) overlap."""
    async with AsyncExitStack() as stack:
        ups = [await stack.enter_async_context(_gateway_started(config, None)) for config in configs]
        yield [await up() for up in ups]


@contextmanager
def http_gateway_process(config: Path) -> Iterator[str]:
    """`http_gateway` for session- and module-scoped sync fixtures: yields the base URL once /healthz answers."""
    base = f"http://127.0.0.1:{free_port()}"
    argv, environment = gateway_command(
        ["serve", "--config", str(config), "--http", base.removeprefix("http://"), "--log-level", "WARNING"], os.environ
    )
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, cwd=ROOT, env=environment)
    try:

        async def up() -> None:
            with anyio.fail_after(30):
                while not await _healthy(f"{base}/healthz"):  # another process's socket offers no event
                    assert process.poll() is None, f"gateway exited with {process.returncode}"
                    await anyio.sleep(0.05)

        anyio.run(up)
        yield base
    finally:
        ended(process)


@contextmanager
def port_file_server(argv: list[str], port_file: Path, *, cwd: str | None = None) -> Iterator[int]:
    """Run a server that writes its port to `port_file` (for module-scoped fixtures); yields the port, then stops it."""
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, cwd=cwd)
    try:
        anyio.run(wait_for, lambda: port_file.exists() or process.poll() is not None, 30.0, "server port file")
        assert process.poll() is None, f"{argv[1]} exited with {process.returncode}"
        yield int(port_file.read_text())
    finally:
        ended(process)


def ended(process: subprocess.Popen[bytes]) -> None:
    """Terminate a server started for a module, give it 10 s to close its children, then kill it."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


async def stop(process: Process) -> None:
    """Terminate, give it 10 s to close its own children, then kill; never interrupted by a cancelled caller."""
    with anyio.CancelScope(shield=True):
        if process.returncode is None:
            with suppress(ProcessLookupError):
                process.terminate()
            with anyio.move_on_after(10):
                await process.wait()
        if process.returncode is None:
            process.kill()
        await process.wait()


@asynccontextmanager
async def http_client(
    base: str, *, mode: str = "auto", headers: dict[str, str] | None = None, **kw: Any
) -> AsyncIterator[Client]:
    """A connected `Client` on the gateway's /mcp; closes the httpx2 client too (the SDK leaves ours open)."""
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http:
        transport = streamable_http_client(f"{base}/mcp", http_client=http, max_sse_event_size=None)
        async with Client(transport, mode=mode, **kw) as client:
            yield client


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purposes
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False
    return True


def text_of(result: types.CallToolResult) -> str:
    """The text of a tool result as the server sent it: text blocks joined, the gateway's hint blocks left out."""
    return "\n".join(
        c.text for c in result.content if isinstance(c, types.TextContent) and not c.text.startswith("[gateway] ")
    )


def hints_of(result: types.CallToolResult) -> list[str]:
    """The gateway's hint blocks of a tool result."""
    return [c.text for c in result.content if isinstance(c, types.TextContent) and c.text.startswith("[gateway] ")]


@asynccontextmanager
async def connected(
    gateway: Gateway | Path,
    *,
    in_process: Mapping[str, Callable[[], Target]] | None = None,
    mode: str = "legacy",
    within_s: float = 30.0,
) -> AsyncIterator[tuple[Gateway, Client]]:
    """An in-process gateway (or one built from a config file) running, with a `Client` connected to its front."""
    if isinstance(gateway, Path):
        gateway = Gateway(load_config(gateway), in_process=in_process)
    with anyio.fail_after(within_s):
        async with gateway.running(), Client(gateway.front.server, mode=mode) as client:
            yield gateway, client


def tool_call(
    name: str,
    arguments: dict[str, Any] | None = None,
    *,
    result: types.CallToolResult | None = None,
    error: GatewayError | None = None,
    server: str | None = None,
    tool: str | None = None,
    session: Session | None = None,
) -> Call:
    """A `tools/call` as the front builds it, optionally already answered (mitmproxy's `tflow`, for unit tests)."""
    params: dict[str, Any] = {"name": name, "arguments": {} if arguments is None else arguments}
    return Call(session or Session("test"), "tools/call", params, server=server, tool=tool, result=result, error=error)
