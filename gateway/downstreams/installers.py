"""How one `package:`/`npm:` environment is installed: a venv made by `uv` when it is on PATH, else by `python -m venv`
and pip (the gateway's own, else the venv's); or an `npm install --prefix` folder. A step that fails is a
`PrepareFailed` naming the tool, the tail of its output and what to do (`downstreams.envs` decides when)."""

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Protocol

import anyio

from gateway.errors import PrepareFailed

_TAIL_LINES = 12


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
        done = await anyio.run_process(argv, check=False, stdin=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    except OSError as exc:
        raise PrepareFailed(
            f"server {env.server!r}: installing {env.label} failed: cannot run {tool} ({argv[0]}): "
            f"{exc.strerror}; then {env.fix}"
        ) from exc
    if done.returncode == 0:
        return
    lines = [line for line in done.stdout.decode(errors="replace").splitlines() if line.strip()]
    # From the first line that reports an error: index warnings before it would crowd it out of the tail.
    first = next((i for i, line in enumerate(lines) if "error" in line.lower()), 0)
    tail = "\n".join(lines[first:][-_TAIL_LINES:])[-2000:]
    where = "the npm registry" if env.kind == "npm" else "the package index"
    look = f"npm view {env.name} versions" if env.kind == "npm" else f"pip index versions {env.name}"
    raise PrepareFailed(
        f"server {env.server!r}: installing {env.label} failed: {tool} exited with {done.returncode}:\n{tail}\n"
        f"Check that the pinned version exists ({look}) and that this machine reaches {where}; fix the pin "
        f"in the config, then {env.fix}"
    )
