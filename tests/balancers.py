"""The operations page's balancer configs, run for real: HAProxy (every client) and nginx (2026-era clients) in front of
gateway replicas, from Debian's packages (scripts/services installs them).

One source: the config text is the operations page's ```haproxy and ```nginx block, as operators copy it; a test changes
only its listen line and its `server` lines (the test's addresses), and asserts it found exactly those to change.
"""

import re
import socket
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.harness import ROOT, free_port
from tests.services import need, poll_until, port_open

OPERATIONS = ROOT / "docs" / "operations.md"
"""Where operators copy the balancer configs from (docs/operations.md, linked from the README)."""

HAPROXY_LISTEN = "    bind :80"
HAPROXY_SERVER = re.compile(r"    server g\d+ \S+ check")
HAPROXY_NAME = re.compile(r"g\d+")
NGINX_LISTEN = "    listen 80;"
NGINX_SERVER = re.compile(r"    server \S+;")
NGINX_MAIN = """\
worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/nginx-error.log warn;
events {{
    worker_connections 512;
}}
http {{
    access_log off;
    client_body_temp_path {folder}/temp/body;
    proxy_temp_path {folder}/temp/proxy;
    fastcgi_temp_path {folder}/temp/fastcgi;
    uwsgi_temp_path {folder}/temp/uwsgi;
    scgi_temp_path {folder}/temp/scgi;
    include {folder}/gateways.conf;
}}
"""
"""What a Debian install's nginx.conf holds around the published block, with this test's folder for its files."""


def readme_block(fence: str) -> str:
    """The operations page's one code block fenced ```<fence>."""
    blocks = re.findall(rf"^```{fence}\n(.*?)^```$", OPERATIONS.read_text(encoding="utf-8"), re.M | re.S)
    assert len(blocks) == 1, f"{OPERATIONS.name} has {len(blocks)} ```{fence} blocks, expected one"
    return str(blocks[0])


def localized(config: str, listen: tuple[str, str], server: re.Pattern[str], servers: list[str]) -> str:
    """`config` with its one `listen[0]` line made `listen[1]` and its run of server lines made `servers`."""
    lines = config.splitlines()
    assert lines.count(listen[0]) == 1, f"expected one {listen[0]!r} line in the operations page's config"
    at = [i for i, line in enumerate(lines) if server.fullmatch(line)]
    assert at and at == list(range(at[0], at[-1] + 1)), f"expected one run of server lines in:\n{config}"
    lines[lines.index(listen[0])] = listen[1]
    return "\n".join([*lines[: at[0]], *servers, *lines[at[-1] + 1 :]]) + "\n"


def haproxy_config(port: int, backends: list[int]) -> str:
    servers = [f"    server g{i} 127.0.0.1:{p} check" for i, p in enumerate(backends)]
    return localized(readme_block("haproxy"), (HAPROXY_LISTEN, f"    bind 127.0.0.1:{port}"), HAPROXY_SERVER, servers)


def nginx_files(folder: Path, port: int | None, backends: list[int] | None) -> Path:
    """The main config in `folder` around the operations page's block (localized unless `port` is None); its path."""
    for part in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):  # never used (nothing is buffered): nginx
        (folder / "temp" / part).mkdir(parents=True, exist_ok=True)  # only needs them to exist and be its own
    block = readme_block("nginx")
    if port is not None and backends is not None:
        servers = [f"    server 127.0.0.1:{p};" for p in backends]
        block = localized(block, (NGINX_LISTEN, f"    listen 127.0.0.1:{port};"), NGINX_SERVER, servers)
    (folder / "gateways.conf").write_text(block, encoding="utf-8")
    main = folder / "nginx.conf"
    main.write_text(NGINX_MAIN.format(folder=folder), encoding="utf-8")
    return main


def nginx_argv(main: Path, *extra: str) -> list[str]:
    return [need("nginx"), "-p", str(main.parent), "-c", str(main), "-e", str(main.parent / "nginx-error.log"), *extra]


def checked(argv: list[str]) -> str:
    """Run a config check; its output, which must hold no warning (nor, with exit status 0, an error)."""
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0 and not re.search(r"\[(WARNING|ALERT|warn|emerg|alert)\]", output), output
    return output


@contextmanager
def running(argv: list[str], port: int, what: str, ready: Callable[[], bool] | None = None) -> Iterator[int]:
    """Run a balancer until its port answers (and `ready()` holds): a port answering alone may be another
    process's, taken between `free_port()` and the balancer's bind, while the balancer itself has exited."""
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL)

    def up() -> bool:
        return port_open(port) and (ready is None or ready())

    try:
        poll_until(lambda: up() or process.poll() is not None, 30.0, f"{what} port")
        assert process.poll() is None, f"{what} exited with {process.returncode}"
        yield port
    finally:
        process.terminate()
        process.wait(timeout=10)


@contextmanager
def haproxy(folder: Path, backends: list[int]) -> Iterator[int]:
    """The operations page's HAProxy round-robin over `backends` (ports of gateway replicas); yields its port. A second
    config file adds a stats socket, so a test can wait for every replica to be back in rotation."""
    port = free_port()
    config, stats = folder / "haproxy.cfg", folder / "haproxy-stats.cfg"
    config.write_text(haproxy_config(port, backends), encoding="utf-8")
    stats.write_text(f"global\n    stats socket {folder / 'haproxy.sock'} mode 600 level user\n", encoding="utf-8")
    argv = [need("haproxy"), "-db", "-f", str(config), "-f", str(stats)]
    with running(argv, port, "haproxy", (folder / "haproxy.sock").exists) as bound:
        yield bound


def in_rotation(folder: Path) -> dict[str, str]:
    """HAProxy's state of each replica (`UP`, `DOWN`, …), from the stats socket of `haproxy`."""
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(folder / "haproxy.sock"))
        s.sendall(b"show stat\n")
        header, *rows = [line.split(",") for line in b"".join(iter(lambda: s.recv(65536), b"")).decode().splitlines()]
    name, status = header.index("svname"), header.index("status")
    return {row[name]: row[status] for row in rows if len(row) > status and HAPROXY_NAME.fullmatch(row[name])}


@contextmanager
def nginx(folder: Path, backends: list[int]) -> Iterator[int]:
    """The operations page's nginx config round-robin over `backends`, in the foreground; yields its port."""
    port = free_port()
    main = nginx_files(folder, port, backends)
    with running(nginx_argv(main, "-g", "daemon off;"), port, "nginx") as bound:
        yield bound
