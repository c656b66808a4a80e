"""A `package:` (PyPI) or `npm:` server's own environment: installed once per pinned spec, then reused.

Each spec gets a folder under `bundled.envs_home()` (`pypi/mcp-gitlab==0.21.2`, `npm/@scope+server@1.2.3`), a venv
or an npm folder (`downstreams.installers`). A stamp written after the last step marks it ready, so an install cut
short is redone, never half used; a changed pin is another folder. Before each start of its server, and on each
`gateway prepare`, the folder is checked against the installers' own records (`downstreams.installed`): a file,
program or dependency gone or cut short gets it reinstalled, and the log or the command's output says what was
broken. An flock keeps two gateways (or `gateway prepare` beside a running one) from installing one spec at once:
the second is told to retry, which a downstream's backoff does by itself.
"""

import fcntl
import json
import logging
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Literal, TypeVar

import anyio

from gateway.config import StdioServerConfig
from gateway.config.packages import npm_pin, pypi_requirement
from gateway.downstreams import installed, installers
from gateway.errors import PrepareFailed

logger = logging.getLogger(__name__)
T = TypeVar("T")
_STAMP = ".prepared"
_SHOWN = 3
"""Problems named in one message; the rest are counted."""


@dataclass(frozen=True, slots=True)
class Prepared:
    """What `Env.prepare` did: `tool` ran for `seconds`, or nothing ran (`reused`, after `checked` files or npm
    packages were found intact); `repaired` says what was broken before it reinstalled, `forced` that it was asked to
    rebuild."""

    reused: bool
    tool: str
    seconds: float
    checked: int = 0
    repaired: str = ""
    forced: bool = False


class Env:
    """The environment of one server's pinned package; `ensure` before each connection attempt."""

    def __init__(self, server: str, kind: Literal["pypi", "npm"], spec: str, program: str | None, home: Path) -> None:
        self.server, self.kind, self.spec, self.program = server, kind, spec, program
        self._pin = pypi_requirement(spec) if kind == "pypi" else None
        self.name = self._pin.name if self._pin is not None else npm_pin(spec)[0]
        self.root = home.absolute() / kind / spec.replace("/", "+")  # absolute: the venv's scripts name its python
        self._checked: installed.Checked | None = None
        """The last check's findings: `command()` reads the programs the records declare from it."""
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
        """Installed completely for this spec (stamped, and for PyPI its interpreter still there); whether it is still
        intact is `check`'s to say."""
        try:
            stamp = json.loads((self.root / _STAMP).read_text())
        except (OSError, ValueError):
            return False
        return stamp.get("spec") == self.spec and (self.kind == "npm" or (self.root / "bin" / "python").exists())

    def check(self) -> installed.Checked:
        """The prepared folder against the installers' own records (a blocking walk of its files: tens of ms)."""
        if self._pin is not None:
            self._checked = installed.pypi(self.root, self._pin)
        else:
            self._checked = installed.npm(self.root, self.name, npm_pin(self.spec)[1])
        return self._checked

    def broken(self) -> str:
        """What the last check found wrong, in one line ("" when intact)."""
        problems = self._checked.problems if self._checked is not None else []
        more = f"; and {len(problems) - _SHOWN} more" if len(problems) > _SHOWN else ""
        return "; ".join(problems[:_SHOWN]) + more

    async def _intact(self) -> bool:
        """Prepared for this spec and found intact (the check runs in a worker thread)."""
        return self.ready() and not (await anyio.to_thread.run_sync(self.check)).problems

    def command(self) -> str:
        """The program to run, inside the environment.

        Raises:
            PrepareFailed: the environment is broken (what is, and the command that repairs it), or the package
                declares no such program (the message lists the ones it has).
        """
        names = (self._checked or self.check()).programs  # those its records declare, there or not
        if broken := self.broken():
            raise PrepareFailed(f"server {self.server!r}: {self.label} is broken ({broken}); {self._repair}")
        if self.kind == "pypi":
            folder, found = self.root / "bin", self.program or self.name
        else:
            folder = self.root / "node_modules" / ".bin"
            found = self.program or (names[0] if len(names) == 1 else self.name.rpartition("/")[2])
        if found in names:
            return str(folder / found)
        default = "" if self.program else " (the default: named like the package)"
        raise PrepareFailed(
            f"server {self.server!r}: {self.label} has no program {found!r}{default}; it has "
            f"{', '.join(sorted(names)) or 'none'}. Set servers.{self.server}.command to one of them."
        )

    def configured(self, server: StdioServerConfig) -> StdioServerConfig:
        """`server` with its command found inside the environment (call after `ensure`)."""
        return server.model_copy(update={"command": self.command()})

    def wrap(self, make: Callable[[StdioServerConfig], T]) -> Callable[[StdioServerConfig], T]:
        """A target factory that runs the environment's program instead of the configured command."""
        return lambda server: make(self.configured(server))

    async def ensure(self) -> None:
        """Ready the environment before a connection attempt: at once when prepared and intact, else install it
        (first use) or reinstall it (broken: the log says what was).

        Raises:
            PrepareFailed: the install failed (again: a failed spec is not retried until a reload or restart, or
                until `gateway prepare` succeeds beside it), or another process is installing it now.
        """
        if await self._intact():
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

    async def prepare(self, *, force: bool = False) -> Prepared:
        """Install the pinned package unless its environment is prepared and intact; reinstall it when broken, or
        when `force`d.

        Raises:
            PrepareFailed: a tool is missing or failed (named, with the tail of its output), the folder cannot be
                written, the result is still broken, or another process is installing it now.
        """
        if not force and await self._intact():
            return Prepared(reused=True, tool="", seconds=0.0, checked=self._checked.count if self._checked else 0)
        broken = self.broken() if self.ready() and not force else ""
        what = (
            f"{self.label} is broken ({broken}) and cannot be reinstalled" if broken else f"cannot install {self.label}"
        )
        if missing := installers.missing_tool(self.kind):
            raise PrepareFailed(f"server {self.server!r}: {what}: {missing}; then {self.fix}")
        started = anyio.current_time()
        try:
            tool = await self._reinstall(broken, force)
        except OSError as exc:
            home, where = self.root.parent.parent, f": {exc.filename}" if exc.filename else ""
            raise PrepareFailed(
                f"server {self.server!r}: {what}: the environments folder {home} cannot be "
                f"written ({exc.strerror or exc}{where}); set GATEWAY_ENVS to a folder this user can write, or give "
                "this user write permission on it"
            ) from exc
        if tool is None:  # another process made it intact while this one checked
            return Prepared(reused=True, tool="", seconds=0.0, checked=self._checked.count if self._checked else 0)
        self._failed = None
        seconds = anyio.current_time() - started
        logger.info("server %s: %s installed with %s in %.1f s", self.server, self.label, tool, seconds)
        return Prepared(reused=False, tool=tool, seconds=seconds, repaired=broken, forced=force)

    async def _reinstall(self, broken: str, force: bool) -> str | None:
        """Install into an emptied folder under the lock, check the result, stamp it; the tool that installed, or
        None when the folder was found intact under the lock."""
        self.root.parent.mkdir(parents=True, exist_ok=True)
        with self._locked():
            if not force and await self._intact():
                return None
            if broken:
                logger.warning("server %s: %s is broken (%s); reinstalling it", self.server, self.label, broken)
            else:
                logger.info("server %s: installing %s into %s", self.server, self.label, self.root)
            await anyio.to_thread.run_sync(partial(shutil.rmtree, self.root, ignore_errors=True))  # a cut-short one
            tool = await installers.install(self)
            if (await anyio.to_thread.run_sync(self.check)).problems:
                raise PrepareFailed(
                    f"server {self.server!r}: {self.label} was installed with {tool} into {self.root}, but its own "
                    f"records disagree with what is there ({self.broken()}); check the disk and the folder's "
                    f"permissions, then {self.fix}"
                )
            # Stamped even when the program the config names is not there: `command()` says which ones are,
            # and a corrected `command` needs no new install.
            stamp = {"spec": self.spec, "tool": tool, "python": sys.version.split()[0]}
            (self.root / _STAMP).write_text(json.dumps(stamp))
        return tool

    @property
    def fix(self) -> str:
        return f"run `gateway prepare {self.server}` (with the same --config), or restart the gateway"

    @property
    def _repair(self) -> str:
        return f"run `gateway prepare {self.server}` (with the same --config), which reinstalls it"

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
