"""A real scale-out deployment for tests and benches: Redis, N gateway replicas (`serve --http` subprocesses on one
config with `store.backend: redis`), and the published HAProxy round-robin in front. Each replica's kitchen and catalog
servers write their events under `replica<i>/`, so a test can tell which replica served a call; its log goes to
`replica<i>/gateway.log`. Replicas accept only the Host clients use to reach the balancer (`listen.allowed_hosts`, as
the README advises), so the balancer's health check must pass without it."""

import os
import subprocess
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.balancers import haproxy, in_rotation
from tests.harness import KITCHEN, PYTHON, ROOT, free_port, gateway_command
from tests.services import RedisServer, need, poll_until, redis_server

CATALOG = str(ROOT / "tests" / "servers" / "catalog.py")


def healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def replica_config(folder: Path, redis_url: str, **sections: Any) -> Path:
    """Kitchen and catalog servers (events per replica via ${REPLICA_DIR}), the Redis store, Think on `folder`
    (a `think` or `listen` section adds to that)."""
    events = "${REPLICA_DIR}"
    servers = {
        "kitchen": {
            "transport": "stdio",
            "command": PYTHON,
            "args": [KITCHEN, "--name", "kitchen", "--events-file", f"{events}/kitchen.events"],
        },
        "catalog": {
            "transport": "stdio",
            "command": PYTHON,
            "args": [CATALOG, "--events-file", f"{events}/catalog.events"],
        },
    }
    config = {
        "servers": servers,
        "store": {"backend": "redis", "url": redis_url, "prefix": "deploy:"},
        # the balancer's host name as its clients write it (here: 127.0.0.1), as docs/operations.md advises
        "listen": {"allowed_hosts": ["127.0.0.1:*"], **sections.pop("listen", {})},
        "think": {
            "workflows_dirs": [str(folder / "workflows")],
            "state_dir": str(folder / "state"),
            **sections.pop("think", {}),
        },
        "versions": {
            "catalogs": {
                "stacks": {
                    "source": {"type": "tool", "tool": "catalog.list_versions"},
                    "append_catalog_to": ["kitchen.echo"],
                }
            }
        },
        **sections,
    }
    path = folder / "gateway.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@dataclass
class Replica:
    folder: Path
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        """What the replica logged (WARNING and up), over all its restarts."""
        path = self.folder / "gateway.log"
        return path.read_text(encoding="utf-8") if path.exists() else ""

    def events(self, server: str) -> list[str]:
        path = self.folder / f"{server}.events"
        return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


@dataclass
class Deployment:
    folder: Path
    config: Path
    redis: RedisServer
    replicas: list[Replica] = field(default_factory=list[Replica])
    balancer_port: int = 0

    @property
    def balancer(self) -> str:
        return f"http://127.0.0.1:{self.balancer_port}"

    def start(self, replica: Replica) -> None:
        """Start (or restart) one replica, without waiting."""
        replica.folder.mkdir(parents=True, exist_ok=True)
        argv, env = gateway_command(
            ["serve", "--config", str(self.config), "--http", f"127.0.0.1:{replica.port}", "--log-level", "WARNING"],
            {**os.environ, "REPLICA_DIR": str(replica.folder)},
        )
        with (replica.folder / "gateway.log").open("ab") as log:
            replica.process = subprocess.Popen(argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stderr=log)

    def wait_up(self, replica: Replica) -> None:
        process = replica.process
        assert process is not None
        poll_until(lambda: healthy(replica.port) or process.poll() is not None, 60.0, f"replica on {replica.port}")
        assert process.poll() is None, (
            f"replica on {replica.port} exited with {process.returncode}: {replica.log()[-3000:]}"
        )

    def restart(self, replica: Replica) -> None:
        """Start a replica again and wait until it answers, and the balancer (if any) sends it requests."""
        self.start(replica)
        self.wait_up(replica)
        if self.balancer_port:
            self.wait_balanced()

    def wait_balanced(self) -> None:
        """Until HAProxy's health check has every running replica in rotation (it checks once a second)."""
        running = {f"g{i}" for i, r in enumerate(self.replicas) if r.process is not None}
        poll_until(lambda: {g for g, s in in_rotation(self.folder).items() if s == "UP"} >= running, 30.0, "rotation")

    def kill(self, replica: Replica) -> None:
        """SIGKILL, as a crash or an OOM kill would: no clean shutdown (its stdio children see their pipes close)."""
        if replica.process is not None:
            replica.process.kill()
            replica.process.wait()
            replica.process = None

    def stop(self, replica: Replica) -> None:
        if replica.process is not None:
            replica.process.terminate()
            try:
                replica.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                replica.process.kill()
                replica.process.wait()
            replica.process = None


@contextmanager
def deployed(
    tmp_path_factory: pytest.TempPathFactory, workflows: Mapping[str, str], **sections: Any
) -> Iterator[Deployment]:
    """A `deployment` in a fresh folder whose `workflows/` holds `workflows` (name -> YAML); skipped (in CI:
    failed) without redis-server or HAProxy."""
    need("redis-server")
    need("haproxy")
    folder = tmp_path_factory.mktemp("deploy")
    (folder / "workflows").mkdir()
    for name, text in workflows.items():
        (folder / "workflows" / f"{name}.yaml").write_text(text, encoding="utf-8")
    with deployment(folder, **sections) as running:
        yield running


@contextmanager
def deployment(folder: Path, replicas: int = 3, **sections: Any) -> Iterator[Deployment]:
    """Redis, `replicas` gateways (started together) and HAProxy; everything stopped afterwards."""
    with ExitStack() as stack:
        redis = stack.enter_context(redis_server(folder / "redis"))
        deploy = Deployment(folder, replica_config(folder, redis.url, **sections), redis)
        deploy.replicas = [Replica(folder / f"replica{i}", free_port()) for i in range(replicas)]
        for replica in deploy.replicas:
            stack.callback(deploy.stop, replica)
            deploy.start(replica)
        for replica in deploy.replicas:
            deploy.wait_up(replica)
        deploy.balancer_port = stack.enter_context(haproxy(folder, [r.port for r in deploy.replicas]))
        deploy.wait_balanced()
        yield deploy
