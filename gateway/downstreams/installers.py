"""How one `package:`/`npm:` environment is installed: a venv made by `uv` when it is on PATH, else by `python -m venv`
and pip (the gateway's own, else the venv's); or an `npm install --prefix` folder. A step that fails is a
`PrepareFailed` naming the tool, the tail of its output and what to do (`downstreams.envs` decides when).

Each step runs in a process group of its own, ended whole when the step ends or is cancelled (the gateway is
leaving): pip's `--python` runs a second pip, and pip, uv and npm run build steps in subprocesses of their own;
killing the step's process alone would leave those installing into a folder nobody will stamp."""

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Protocol

import anyio

from adapters.procgroup import kill_group
from gateway.errors import PrepareFailed

_TAIL_LINES = 12
_TERM_GRACE_S = 2.0
"""What a step's processes get to exit on SIGTERM before SIGKILL (pip and npm exit at once)."""


class Installable(Protocol):
    """What the steps and their messages need of an environment (`envs.Env`)."""

    @property
    def server(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def spec(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def root(self) -> Path: ...

    @property
    def label(self) -> str: ...

    @property
    def fix(self) -> str: ...


def missing_tool(kind: str) -> str | None:
    """What this machine lacks to install (or run) the package, and how to get it; None when nothing."""
    if kind == "npm":
        absent = [tool for tool in ("npm", "node") if shutil.which(tool) is None]
        if absent:
            return f"{' and '.join(absent)} not on PATH; install Node.js (18 or newer) with npm"
    elif shutil.which("uv") is None and not any(map(importlib.util.find_spec, ("pip", "ensurepip"))):
        return "neither uv, nor pip or ensurepip for this Python; install uv, or Python's venv (Debian: python3-venv)"
    return None


async def install(env: Installable) -> str:
    """Run the install steps into `env.root` (absent or empty); returns the tool that installed."""
    if env.kind == "npm":
        npm = shutil.which("npm") or "npm"
        env.root.mkdir(parents=True)
        (env.root / "package.json").write_text('{"private": true}\n')
        quiet = ["--no-audit", "--no-fund", "--loglevel=error", "--save-exact"]
        await _run(env, "npm", [npm, "install", "--prefix", str(env.root), *quiet, env.spec])
        return "npm"
    python = str(env.root / "bin" / "python")
    if uv := shutil.which("uv"):
        await _run(env, "uv venv", [uv, "venv", "--quiet", "--python", sys.executable, str(env.root)])
        await _run(env, "uv pip", [uv, "pip", "install", "--quiet", "--python", python, env.spec])
        return "uv"
    install = ["install", "--quiet", "--disable-pip-version-check", "--no-input", env.spec]
    if importlib.util.find_spec("pip") is not None:
        # The gateway's own pip installs into the new venv (`--python`): no pip bootstrapped into each.
        await _run(env, "python -m venv", [sys.executable, "-m", "venv", "--without-pip", str(env.root)])
        await _run(env, "pip", [sys.executable, "-m", "pip", "--python", python, *install])
    else:
        await _run(env, "python -m venv", [sys.executable, "-m", "venv", str(env.root)])
        await _run(env, "pip", [python, "-m", "pip", *install])
    return "pip"


async def _run(env: Installable, tool: str, argv: list[str]) -> None:
    try:
        returncode, output = await _grouped(argv)
    except OSError as exc:
        raise PrepareFailed(
            f"server {env.server!r}: installing {env.label} failed: cannot run {tool} ({argv[0]}): "
            f"{exc.strerror}; then {env.fix}"
        ) from exc
    if returncode == 0:
        return
    lines = [line for line in output.decode(errors="replace").splitlines() if line.strip()]
    # From the first line that reports an error: index warnings before it would crowd it out of the tail.
    first = next((i for i, line in enumerate(lines) if "error" in line.lower()), 0)
    tail = "\n".join(lines[first:][-_TAIL_LINES:])[-2000:]
    where = "the npm registry" if env.kind == "npm" else "the package index"
    look = f"npm view {env.name} versions" if env.kind == "npm" else f"pip index versions {env.name}"
    raise PrepareFailed(
        f"server {env.server!r}: installing {env.label} failed: {tool} exited with {returncode}:\n{tail}\n"
        f"Check that the pinned version exists ({look}) and that this machine reaches {where}; fix the pin "
        f"in the config, then {env.fix}"
    )


async def _grouped(argv: list[str]) -> tuple[int, bytes]:
    """Run `argv` in a session of its own to its end: its exit status and output (stderr within). Whatever of its
    group is left when it ends, or when the caller is cancelled, is ended too.

    Raises:
        OSError: the program cannot be run.
    """
    process = await anyio.open_process(argv, stdin=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        assert process.stdout is not None
        output = bytearray()
        async for chunk in process.stdout:
            output += chunk
        return await process.wait(), bytes(output)
    finally:
        with anyio.CancelScope(shield=True):
            await kill_group(process, _TERM_GRACE_S)
            await process.aclose()
