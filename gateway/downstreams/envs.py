"""A `package:` (PyPI) or `npm:` server's own environment: installed once per pinned spec, then reused.

Each spec gets a folder under `bundled.envs_home()` (`pypi/mcp-gitlab==0.21.2`, `npm/@scope+server@1.2.3`): a
venv made by `uv` when it is on PATH, else by `python -m venv` and pip (the gateway's own, else the venv's); or
an `npm install --prefix` folder. A stamp written after the last step marks it ready, so an install cut short is
redone, never half used; a changed pin is another folder. An flock keeps two gateways (or `gateway prepare`
beside a running one) from installing one spec at once: the second is told to retry, which a downstream's
backoff does by itself.
"""

import fcntl
import importlib.util
import json
import logging
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Literal, TypeVar

import anyio

from gateway.config import StdioServerConfig
from gateway.config.packages import npm_name, pypi_name
from gateway.errors import PrepareFailed

logger = logging.getLogger(__name__)
T = TypeVar("T")
_STAMP = ".prepared"
_TAIL_LINES = 12
_NOT_PROGRAMS = ("python", "pip", "activate", "Activate", "deactivate")


@dataclass(frozen=True, slots=True)
class Prepared:
    """What `Env.prepare` did: `tool` ran for `seconds`, or nothing ran (`reused`)."""

    reused: bool
    tool: str
    seconds: float


class Env:
    """The environment of one server's pinned package; `ensure` before each connection attempt."""

    def __init__(self, server: str, kind: Literal["pypi", "npm"], spec: str, program: str | None, home: Path) -> None:
        self.server, self.kind, self.spec, self.program = server, kind, spec, program
        self.name = pypi_name(spec) if kind == "pypi" else npm_name(spec)
        self.root = home / kind / spec.replace("/", "+")
        self._failed: str | None = None
        """Why the last install failed: not tried again on every reconnect (a bad pin stays bad)."""
        self._installing = anyio.Lock()
        """One install per process: a per-user server's processes share this environment, and the file lock below
        refuses a second taker even within one process (it is for other processes)."""

    @classmethod
    def of(cls, name: str, server: StdioServerConfig, home: Path) -> "Env | None":
        """The environment `server` runs in; None for a server given by its command alone."""
        if server.package is not None:
            return cls(name, "pypi", server.package, server.command, home)
        if server.npm is not None:
            return cls(name, "npm", server.npm, server.command, home)
        return None

    @property
    def label(self) -> str:
        return f"{'package' if self.kind == 'pypi' else 'npm'} {self.spec}"

    def ready(self) -> bool:
        """Installed completely for this spec (and, for PyPI, its interpreter still there)."""
        try:
            stamp = json.loads((self.root / _STAMP).read_text())
        except (OSError, ValueError):
            return False
        return stamp.get("spec") == self.spec and (self.kind == "npm" or (self.root / "bin" / "python").exists())

    def missing_tool(self) -> str | None:
        """What this machine lacks to install (or run) the package, and how to get it; None when nothing."""
        if self.kind == "npm":
            absent = [tool for tool in ("npm", "node") if shutil.which(tool) is None]
            if absent:
                return f"{' and '.join(absent)} not on PATH; install Node.js (18 or newer) with npm"
        elif shutil.which("uv") is None and not any(map(importlib.util.find_spec, ("pip", "ensurepip"))):
            return (
                "neither uv, nor pip or ensurepip for this Python; install uv, or Python's venv (Debian: python3-venv)"
            )
        return None

    def command(self) -> str:
        """The program to run, inside the environment.

        Raises:
            PrepareFailed: the package has no such program (the message lists the ones it has).
        """
        if self.kind == "pypi":
            folder, found = self.root / "bin", self.program or self.name
            names = (
                [p.name for p in folder.iterdir() if not p.name.startswith(_NOT_PROGRAMS)] if folder.is_dir() else []
            )
        else:
            folder, names = self.root / "node_modules" / ".bin", self._npm_bins()
            found = self.program or (names[0] if len(names) == 1 else self.name.rpartition("/")[2])
        if found in names:
            return str(folder / found)
        default = "" if self.program else " (the default: named like the package)"
        raise PrepareFailed(
            f"server {self.server!r}: {self.label} has no program {found!r}{default}; it has "
            f"{', '.join(sorted(names)) or 'none'}. Set servers.{self.server}.command to one of them."
        )

    def _npm_bins(self) -> list[str]:
        try:
            manifest = json.loads((self.root / "node_modules" / self.name / "package.json").read_text())
        except (OSError, ValueError):
            return []
        bins = manifest.get("bin") or {}
        return [self.name.rpartition("/")[2]] if isinstance(bins, str) else sorted(bins)

    def configured(self, server: StdioServerConfig) -> StdioServerConfig:
        """`server` with its command found inside the environment (call after `ensure`)."""
        return server.model_copy(update={"command": self.command()})

    def wrap(self, make: Callable[[StdioServerConfig], T]) -> Callable[[StdioServerConfig], T]:
        """A target factory that runs the environment's program instead of the configured command."""
        return lambda server: make(self.configured(server))

    async def ensure(self) -> None:
        """Ready the environment before a connection attempt: at once when prepared, else install it (first use).

        Raises:
            PrepareFailed: the install failed (again: a failed spec is not retried until a reload or restart, or
                until `gateway prepare` succeeds beside it), or another process is installing it now.
        """
        if self.ready():
            return
        async with self._installing:  # a second user's process waits for the first one's install
            if self._failed is not None:
                raise PrepareFailed(self._failed)
            try:
                await self.prepare()
            except PrepareFailed as exc:
                if not exc.busy:
                    self._failed = str(exc)
                raise

    async def prepare(self) -> Prepared:
        """Install the pinned package unless its environment is ready.

        Raises:
            PrepareFailed: a tool is missing or failed (named, with the tail of its output), or it is busy.
        """
        if self.ready():
            return Prepared(reused=True, tool="", seconds=0.0)
        if missing := self.missing_tool():
            raise PrepareFailed(f"server {self.server!r}: cannot install {self.label}: {missing}; then {self._fix}")
        started = anyio.current_time()
        self.root.parent.mkdir(parents=True, exist_ok=True)
        with self._locked():
            if self.ready():  # another process finished it while this one waited for the lock
                return Prepared(reused=True, tool="", seconds=0.0)
            logger.info("server %s: installing %s into %s (first use)", self.server, self.label, self.root)
            await anyio.to_thread.run_sync(partial(shutil.rmtree, self.root, ignore_errors=True))  # a cut-short one
            tool = await self._install()
            # Stamped even when the program the config names is not there: `command()` says which ones are,
            # and a corrected `command` needs no new install.
            stamp = {"spec": self.spec, "tool": tool, "python": sys.version.split()[0]}
            (self.root / _STAMP).write_text(json.dumps(stamp))
        self._failed = None
        seconds = anyio.current_time() - started
        logger.info("server %s: %s installed with %s in %.1f s", self.server, self.label, tool, seconds)
        return Prepared(reused=False, tool=tool, seconds=seconds)

    @property
    def _fix(self) -> str:
        return f"run `gateway prepare {self.server}` (with the same --config), or restart the gateway"

    @contextmanager
    def _locked(self) -> Iterator[None]:
        lock = self.root.with_name(self.root.name + ".lock")
        with lock.open("a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise PrepareFailed(
                    f"server {self.server!r}: {self.label} is being installed by another process now ({lock} is "
                    "locked); it starts once that install is done",
                    busy=True,
                ) from None
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    async def _install(self) -> str:
        """Run the install steps; returns the tool that installed."""
        if self.kind == "npm":
            npm = shutil.which("npm") or "npm"
            self.root.mkdir(parents=True)
            (self.root / "package.json").write_text('{"private": true}\n')
            quiet = ["--no-audit", "--no-fund", "--loglevel=error", "--save-exact"]
            await self._run("npm", [npm, "install", "--prefix", str(self.root), *quiet, self.spec])
            return "npm"
        python = str(self.root / "bin" / "python")
        if uv := shutil.which("uv"):
            await self._run("uv venv", [uv, "venv", "--quiet", "--python", sys.executable, str(self.root)])
            await self._run("uv pip", [uv, "pip", "install", "--quiet", "--python", python, self.spec])
            return "uv"
        install = ["install", "--quiet", "--disable-pip-version-check", "--no-input", self.spec]
        if importlib.util.find_spec("pip") is not None:
            # The gateway's own pip installs into the new venv (`--python`): no pip bootstrapped into each.
            await self._run("python -m venv", [sys.executable, "-m", "venv", "--without-pip", str(self.root)])
            await self._run("pip", [sys.executable, "-m", "pip", "--python", python, *install])
        else:
            await self._run("python -m venv", [sys.executable, "-m", "venv", str(self.root)])
            await self._run("pip", [python, "-m", "pip", *install])
        return "pip"

    async def _run(self, tool: str, argv: list[str]) -> None:
        try:
            done = await anyio.run_process(argv, check=False, stdin=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        except OSError as exc:
            raise PrepareFailed(
                f"server {self.server!r}: installing {self.label} failed: cannot run {tool} ({argv[0]}): "
                f"{exc.strerror}; then {self._fix}"
            ) from exc
        if done.returncode == 0:
            return
        lines = [line for line in done.stdout.decode(errors="replace").splitlines() if line.strip()]
        # From the first line that reports an error: index warnings before it would crowd it out of the tail.
        first = next((i for i, line in enumerate(lines) if "error" in line.lower()), 0)
        tail = "\n".join(lines[first:][-_TAIL_LINES:])[-2000:]
        where = "the npm registry" if self.kind == "npm" else "the package index"
        look = f"npm view {self.name} versions" if self.kind == "npm" else f"pip index versions {self.name}"
        raise PrepareFailed(
            f"server {self.server!r}: installing {self.label} failed: {tool} exited with {done.returncode}:\n{tail}\n"
            f"Check that the pinned version exists ({look}) and that this machine reaches {where}; fix the pin "
            f"in the config, then {self._fix}"
        )
