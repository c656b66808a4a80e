"""Real Redis processes for the store and deployment tests (Debian's package, installed by scripts/setup-lab), and
waiting for other processes' ports (the balancers: tests/balancers.py).

Each runs in the foreground on a free port with its files in a test folder, and is stopped by the context manager.
"""

import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gateway.config import GatewayConfig
from tests.harness import free_port


def poll_until(predicate: Callable[[], bool], within_s: float, what: str) -> None:
    """Sync twin of `harness.wait_for` for fixtures and sync steps: another process's port offers no event."""
    deadline = time.monotonic() + within_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not true within {within_s:g} s")
        time.sleep(0.02)


def need(binary: str) -> str:
    """The binary's path, or skip: only when it truly is not installed (scripts/setup-lab installs it)."""
    path = shutil.which(binary) or next(
        (p for p in (f"/usr/sbin/{binary}", f"/usr/bin/{binary}") if Path(p).exists()), None
    )
    if path is None:
        pytest.skip(
            f"{binary} is not installed and could not be installed by ./scripts/setup-lab (apt-get install {binary})"
        )
    return path


def answers_ping(port: int) -> bool:
    """Redis is up and has loaded its data (a restarting Redis answers -LOADING until then)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@dataclass
class RedisServer:
    """A `redis-server` with an append-only file (fsync per write): a restart keeps every acknowledged write."""

    folder: Path
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        argv = [need("redis-server"), "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder)]
        argv += ["--appendonly", "yes", "--appendfsync", "always", "--save", "", "--logfile", "redis.log"]
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        process = self.process
        poll_until(lambda: answers_ping(self.port) or process.poll() is not None, 30.0, "redis-server ping")
        assert process.poll() is None, f"redis-server exited with {process.returncode}: see {self.folder}/redis.log"

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()  # SIGTERM: Redis flushes its append-only file and exits
            self.process.wait(timeout=20)
            self.process = None


@contextmanager
def redis_server(folder: Path) -> Iterator[RedisServer]:
    folder.mkdir(parents=True, exist_ok=True)
    server = RedisServer(folder, free_port())
    server.start()
    try:
        yield server
    finally:
        if server.process is not None:
            server.process.kill()
            server.process.wait()


def store_config(backend: str, url: str, prefix: str, folder: Path, **store: Any) -> GatewayConfig:
    """A config whose `store` section (and state/outputs folders under `folder`) is as given."""
    return GatewayConfig.model_validate(
        {
            "store": {"backend": backend, "url": url or "redis://127.0.0.1:6379/0", "prefix": prefix, **store},
            "think": {"state_dir": str(folder / "state")},
            "limits": {"outputs_dir": str(folder / "outputs")},
        }
    )
