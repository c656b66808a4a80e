"""A `package:` server whose install the test holds mid-build, for real: a local sdist (`heldpkg==1.0`, found by pip
or uv through the variables in `HeldInstall.env`, no index) whose build backend (`tests/held_backend.py`) reports
its pid over TCP and waits for the test's word. Released, it builds a wheel whose program is the kitchen server.
With the helpers that follow an install's processes: from the backend up to the gateway, and which survive."""

import json
import os
import signal
import tarfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest
from anyio.abc import SocketAttribute, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from gateway.downstreams.envs import Env
from tests.harness import KITCHEN, PYTHON, ROOT

SPEC = "heldpkg==1.0"
PYPROJECT = '[build-system]\nrequires = []\nbuild-backend = "held_backend"\nbackend-path = ["."]\n'


@dataclass
class HeldInstall:
    """Each build of `SPEC` connects here and waits until `release()`; `started()` is the next one's pid."""

    envs: Path
    """`GATEWAY_ENVS` for the block: where the gateways the test starts install `SPEC`."""
    _reached: MemoryObjectSendStream[int]
    _pids: MemoryObjectReceiveStream[int]
    _go: anyio.Event = field(default_factory=anyio.Event)

    async def started(self) -> int:
        """The pid of the next build backend that reached the hold."""
        return await self._pids.receive()

    def env(self) -> Env:
        """The environment of a server named "held" that runs `SPEC`."""
        return Env("held", "pypi", SPEC, None, self.envs)

    def release(self) -> None:
        """Let the builds waiting now, and all later ones, finish."""
        self._go.set()

    async def _hold(self, build: SocketStream) -> None:
        async with build:
            pid = int(await BufferedByteReceiveStream(build).receive_until(b"\n", 32))
            await self._reached.send(pid)
            await self._go.wait()
            await build.send(b"go\n")


@asynccontextmanager
async def held_install(folder: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[HeldInstall]:
    """The sdist written under `folder`, the hold served, and for the block the variables that point pip and uv at
    the sdist alone (no index; a cache of the test's own: no wheel built here is reused later) and `GATEWAY_ENVS`
    at `folder/envs`."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(SocketAttribute.local_port)
    dist, source = folder / "dist", folder / "heldpkg-1.0"
    source.mkdir(parents=True)
    (source / "pyproject.toml").write_text(PYPROJECT)
    (source / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: heldpkg\nVersion: 1.0\n")
    (source / "held_backend.py").write_text((ROOT / "tests" / "held_backend.py").read_text())
    (source / "held.json").write_text(json.dumps({"port": port, "python": PYTHON, "kitchen": KITCHEN}))
    dist.mkdir()
    with tarfile.open(dist / "heldpkg-1.0.tar.gz", "w:gz") as sdist:
        sdist.add(source, arcname=source.name)
    cache = str(folder / "cache")
    variables = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(dist), "PIP_CACHE_DIR": cache}
    variables |= {"UV_NO_INDEX": "1", "UV_FIND_LINKS": str(dist), "UV_CACHE_DIR": cache}
    for name, value in {**variables, "GATEWAY_ENVS": str(folder / "envs")}.items():
        monkeypatch.setenv(name, value)
    reached, pids = anyio.create_memory_object_stream[int](8)
    held = HeldInstall(folder / "envs", reached, pids)
    async with listener, reached, pids, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, held._hold)
        yield held
        tg.cancel_scope.cancel()


@dataclass(frozen=True)
class Proc:
    """A process by pid and start time (clock ticks since boot): a pid reused later is another process."""

    pid: int
    started: int


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after "pid (comm) ": state, ppid, pgrp, ... (None when it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2 :].split()


def lineage(pid: int, top: int) -> list[Proc]:
    """`pid` and its ancestors below `top` (the gateway's process): every process of the install that holds it."""
    found: list[Proc] = []
    while pid != top:
        fields = _stat(pid)
        assert fields is not None, f"process {pid} ended before its lineage up to {top} was read"
        assert pid > 1, f"the build backend does not descend from process {top}"
        found.append(Proc(pid, int(fields[19])))
        pid = int(fields[1])
    return found


def survivors(procs: list[Proc]) -> list[str]:
    """Those of `procs` still running (a zombie is dead), each with its command line."""
    alive = []
    for proc in procs:
        fields = _stat(proc.pid)
        if fields is not None and int(fields[19]) == proc.started and fields[0] not in ("Z", "X"):
            with suppress(OSError):
                command = Path(f"/proc/{proc.pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                alive.append(f"{proc.pid}: {command[:200]}")
    return alive


def end(procs: list[Proc]) -> None:
    """Kill those of `procs` still there: a failing test leaves no orphan behind either."""
    for proc in procs:
        fields = _stat(proc.pid)
        if fields is not None and int(fields[19]) == proc.started:
            with suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
