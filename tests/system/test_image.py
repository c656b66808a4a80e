"""The container image and the team set-up (deploy/): what scripts/container builds and runs with podman, checked here
without a container engine. The Containerfile's final stage runs as a non-root user and its HEALTHCHECK (Python, no
curl) passes against a serving gateway and fails against none; compose.yaml runs three replicas of the image on one
Redis behind HAProxy; haproxy.cfg is the operations page's config with only its `bind` and `server` lines changed."""

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from gateway.config.loading import load_config
from tests.balancers import HAPROXY_LISTEN, HAPROXY_SERVER, localized, readme_block
from tests.harness import ROOT, free_port, http_gateway

DEPLOY = ROOT / "deploy"
IMAGE_PYTHON = "/opt/gateway/bin/python"


def instructions(containerfile: Path) -> list[list[tuple[str, str]]]:
    """The Containerfile's stages, each a list of (INSTRUCTION, arguments) with continuation lines joined."""
    text = re.sub(r"\\\n", " ", containerfile.read_text(encoding="utf-8"))
    stages: list[list[tuple[str, str]]] = [[]]
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        word, _, rest = line.strip().partition(" ")
        if word.upper() == "FROM":
            stages.append([])
        stages[-1].append((word.upper(), rest.strip()))
    return stages


def last(stage: list[tuple[str, str]], word: str) -> str:
    found = [rest for w, rest in stage if w == word]
    assert found, f"the Containerfile's final stage has no {word}"
    return found[-1]


@pytest.fixture(scope="module")
def image() -> list[tuple[str, str]]:
    return instructions(DEPLOY / "Containerfile")[-1]


def served_port(argv: list[str]) -> int:
    """The port of a `serve --http HOST:PORT` command line."""
    return int(argv[argv.index("--http") + 1].rsplit(":", 1)[1])


def test_the_image_runs_as_a_user_it_creates_not_root(image: list[tuple[str, str]]) -> None:
    uid, _, gid = last(image, "USER").partition(":")
    assert uid.isdigit() and int(uid) != 0 and gid.isdigit() and int(gid) != 0
    created = " ".join(rest for w, rest in image if w == "RUN")
    assert f"useradd --no-log-init --uid {uid}" in created and f"groupadd --gid {gid}" in created
    assert [w for w, _ in image].index("USER") > max(i for i, (w, _) in enumerate(image) if w in ("RUN", "COPY"))


def test_the_image_serves_its_own_config_on_the_port_it_exposes(image: list[tuple[str, str]]) -> None:
    argv = [*json.loads(last(image, "ENTRYPOINT")), *json.loads(last(image, "CMD"))]
    assert argv[:2] == ["gateway", "serve"] and argv[argv.index("--http") + 1].startswith("0.0.0.0:")
    assert served_port(argv) == int(last(image, "EXPOSE"))
    copied = dict(rest.split() for w, rest in image if w == "COPY" and not rest.startswith("--from"))
    assert copied["gateway.yaml"] == argv[argv.index("--config") + 1]  # deploy/gateway.yaml, in the build context
    assert load_config(DEPLOY / "gateway.yaml").servers.keys() == {"time"}  # no git server: the image has no git


def health_check(image: list[tuple[str, str]]) -> list[str]:
    """The HEALTHCHECK's exec-form command."""
    options, _, command = last(image, "HEALTHCHECK").partition("CMD ")
    assert "--start-period=" in options and "--timeout=" in options
    argv: list[str] = json.loads(command)
    return argv


def test_the_health_check_asks_healthz_with_the_images_python_not_curl(image: list[tuple[str, str]]) -> None:
    argv = health_check(image)
    assert argv[0] == IMAGE_PYTHON and "curl" not in " ".join(argv) and "wget" not in " ".join(argv)
    cmd = [*json.loads(last(image, "ENTRYPOINT")), *json.loads(last(image, "CMD"))]
    assert f"http://127.0.0.1:{served_port(cmd)}/healthz" in argv[-1]


def run_check(argv: list[str], url: str) -> int:
    """The image's health check, run here: this Python for the image's, `url` for its /healthz."""
    local = [sys.executable, *argv[1:-1], re.sub(r"http://127\.0\.0\.1:\d+", url, argv[-1])]
    return subprocess.run(local, capture_output=True, timeout=30, check=False).returncode


@pytest.mark.anyio
async def test_the_health_check_passes_against_the_images_config_served_and_fails_once_it_stops(
    image: list[tuple[str, str]], tmp_path: Path
) -> None:
    argv = health_check(image)
    async with http_gateway(DEPLOY / "gateway.yaml", env={"GATEWAY_DATA": str(tmp_path)}) as base:
        assert await anyio.to_thread.run_sync(run_check, argv, base) == 0
    assert await anyio.to_thread.run_sync(run_check, argv, base) == 1
    assert await anyio.to_thread.run_sync(run_check, argv, f"http://127.0.0.1:{free_port()}") == 1


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    services: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))["services"]
    return services


def mounted(service: dict[str, Any], source: str) -> str:
    """Where `service` mounts the file `source` (relative to deploy/)."""
    (target,) = [v.split(":")[1] for v in service["volumes"] if v.split(":")[0] == source]
    assert (DEPLOY / source).is_file()
    return str(target)


def replicas(compose: dict[str, Any]) -> dict[str, Any]:
    return {name: s for name, s in compose.items() if s["command"][0] == "serve"}


def test_compose_runs_three_replicas_of_the_image_on_one_redis(
    compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    gateways = replicas(compose)
    assert len(gateways) == 3 and len({id(s) for s in gateways.values()}) == 1  # one definition, three services
    gateway = next(iter(gateways.values()))
    assert gateway["image"].endswith(":-localhost/mcp-doorway:latest}")  # what scripts/container tags
    config = gateway["command"][gateway["command"].index("--config") + 1]
    assert mounted(gateway, "./replica.yaml") == config
    redis_url = gateway["environment"]["REDIS_URL"]
    host = re.fullmatch(r"redis://([a-z0-9-]+):6379/\d+", redis_url)
    assert host and compose[host[1]]["command"][0] == "redis-server" and host[1] in gateway["depends_on"]
    redis = compose[host[1]]["command"]
    assert redis[redis.index("--appendonly") + 1] == "yes"  # docs/operations.md: a restart keeps the runs
    monkeypatch.setenv("REDIS_URL", redis_url)
    store = load_config(DEPLOY / "replica.yaml").store
    assert (store.backend, store.url) == ("redis", redis_url)


def test_compose_puts_haproxy_with_the_operations_pages_config_in_front_of_the_replicas(
    compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    haproxy = compose["haproxy"]
    config = mounted(haproxy, "./haproxy.cfg")
    assert haproxy["command"][0] == "haproxy" and haproxy["command"][haproxy["command"].index("-f") + 1] == config
    published = int(haproxy["ports"][0].rsplit(":", 1)[1])
    servers = [f"    server g{i} {name}:{served_port(s['command'])} check" for i, (name, s) in
               enumerate(sorted(replicas(compose).items()))]  # fmt: skip
    docs = localized(readme_block("haproxy"), (HAPROXY_LISTEN, f"    bind :{published}"), HAPROXY_SERVER, servers)
    text = (DEPLOY / "haproxy.cfg").read_text(encoding="utf-8")
    assert re.sub(r"\A(#.*\n)+", "", text) == docs, "deploy/haproxy.cfg differs from the operations page's config"
    assert set(haproxy["depends_on"]) == set(replicas(compose))
    monkeypatch.setenv("REDIS_URL", "redis://redis:6379/0")
    header = load_config(DEPLOY / "replica.yaml").listen.forwarded_client_header
    assert f"http-request set-header {header} %[src]:%[src_port]" in docs  # the header the balancer overwrites
