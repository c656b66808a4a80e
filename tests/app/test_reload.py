"""Config reload without a restart: an invalid file is refused and the running config stays; only servers whose
definition changed restart (the others keep their process); calls in flight on a replaced server finish;
clients hear list_changed only when the exposed catalog changed; SIGHUP, a change of the file and
`gateway reload --url` all trigger it."""

import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
import yaml
from mcp import Client
from mcp.client.session import IncomingMessage

from gateway.app.gateway import Gateway
from gateway.app.reload import Report
from gateway.config import load_config
from tests.deployment import healthy
from tests.harness import PYTHON, ROOT, free_port, http_client, kitchen, pid_alive, stop, text_of, wait_for

pytestmark = pytest.mark.anyio


def write(path: Path, servers: dict[str, Any], **sections: Any) -> Path:
    # Exposure `all`: these tests watch every tool come and go in listings, past the 40 tools of `auto`.
    path.write_text(yaml.safe_dump({"servers": servers, "exposure": {"mode": "all"}, **sections}), encoding="utf-8")
    return path


class Heard:
    """Tool-list notifications a client got, counted from a mark."""

    def __init__(self) -> None:
        self.count = 0
        self.event = anyio.Event()

    async def __call__(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.count += 1
            self.event.set()

    def mark(self) -> None:
        self.count, self.event = 0, anyio.Event()


@asynccontextmanager
async def reloading(path: Path) -> AsyncIterator[tuple[Gateway, Client, Heard]]:
    gateway = Gateway(load_config(path), config_path=path)
    heard = Heard()
    with anyio.fail_after(60):
        async with gateway.running(), Client(gateway.front.server, mode="legacy", message_handler=heard) as client:
            yield gateway, client, heard


async def reload(gateway: Gateway) -> Report:
    assert gateway.reloader is not None
    with anyio.fail_after(30):
        return await gateway.reloader.reload()


async def pid(client: Client, server: str) -> int:
    return int(text_of(await client.call_tool(f"{server}.pid", {})))


async def test_an_invalid_config_is_refused_and_the_running_one_stays(tmp_path: Path) -> None:
    path = write(tmp_path / "gateway.yaml", {"a": kitchen("a")})
    async with reloading(path) as (gateway, client, _):
        before = await pid(client, "a")
        path.write_text(path.read_text() + "limitz: {}\n", encoding="utf-8")
        report = await reload(gateway)
        assert not report.ok and report.error is not None and "limitz" in report.error
        assert await pid(client, "a") == before  # nothing restarted
        assert text_of(await client.call_tool("a.echo", {"text": "still"})) == "still"


async def test_only_changed_servers_restart_and_clients_hear_only_real_catalog_changes(tmp_path: Path) -> None:
    path = write(tmp_path / "gateway.yaml", {"a": kitchen("a"), "b": kitchen("b")})
    async with reloading(path) as (gateway, client, heard):
        a, b = await pid(client, "a"), await pid(client, "b")
        heard.mark()
        write(path, {"a": kitchen("a"), "b": kitchen("b", timeout_s=30)})  # same tools, another definition
        report = await reload(gateway)
        assert (report.restarted, report.unchanged, report.notified) == (["b"], ["a"], [])
        assert await pid(client, "a") == a and await pid(client, "b") != b
        await wait_for(lambda: not pid_alive(b), 15, "the replaced b process gone")
        write(path, {"a": kitchen("a"), "b": kitchen("b", timeout_s=30), "c": kitchen("c")})
        report = await reload(gateway)
        assert report.added == ["c"] and "tools" in report.notified  # and its prompts and resources
        with anyio.fail_after(10):
            await heard.event.wait()
        assert heard.count == 1  # the real change only; the quiet restart of b sent nothing
        assert text_of(await client.call_tool("c.echo", {"text": "new"})) == "new"
        assert "c.echo" in {t.name for t in (await client.list_tools(cache_mode="bypass")).tools}


async def test_a_call_in_flight_on_a_replaced_or_removed_server_finishes(tmp_path: Path) -> None:
    events = {name: tmp_path / f"{name}.events" for name in "ab"}
    servers = {name: kitchen(name, events=events[name]) for name in "ab"}
    path = write(tmp_path / "gateway.yaml", servers)
    async with reloading(path) as (gateway, client, _):
        b = await pid(client, "b")
        results: list[types.CallToolResult] = []

        async def slow(server: str) -> None:
            results.append(await client.call_tool(f"{server}.slow", {"steps": 6, "delay_s": 0.25}))

        def started() -> bool:
            return (
                all("call slow" in e.read_text() for e in events.values() if e.exists())
                and len([e for e in events.values() if e.exists()]) == 2
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow, "a")
            tg.start_soon(slow, "b")
            await wait_for(started, 10, "both slow calls reached their servers")
            write(path, {"a": kitchen("a", events=events["a"], timeout_s=20)})  # a replaced, b removed
            report = await reload(gateway)
            assert (report.restarted, report.removed) == (["a"], ["b"])
        assert [r.is_error for r in results] == [False, False], [text_of(r) for r in results]
        await wait_for(lambda: not pid_alive(b), 15, "the removed b process gone")
        gone = await client.call_tool("b.echo", {"text": "x"})
        assert gone.is_error and "Unknown tool" in text_of(gone)


async def test_sighup_a_file_change_and_gateway_reload_url_each_reload_a_running_http_gateway(tmp_path: Path) -> None:
    path = write(tmp_path / "gateway.yaml", {"a": kitchen("a")})
    port = free_port()
    argv = [
        PYTHON,
        "-m",
        "gateway",
        "serve",
        "--config",
        str(path),
        "--http",
        f"127.0.0.1:{port}",
        "--log-level",
        "WARNING",
    ]
    process = await anyio.open_process(
        argv, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=None, stderr=None
    )
    url = f"http://127.0.0.1:{port}"
    try:
        await wait_for(lambda: healthy(port) or process.returncode is not None, 60, "gateway up")
        async with http_client(url) as client:

            async def listed(name: str) -> bool:
                """Callable by that name (listing may be in search mode: a big catalog is not listed whole)."""
                return not (await client.call_tool(name, {"text": "x"})).is_error

            async def until_listed(name: str, present: bool = True) -> None:
                with anyio.fail_after(15):
                    while await listed(name) is not present:  # noqa: ASYNC110
                        await anyio.sleep(0.1)  # another process's reload offers no event to wait on

            write(path, {"a": kitchen("a"), "b": kitchen("b")})  # the file watcher picks this up
            await until_listed("b.echo")
            os.kill(process.pid, signal.SIGHUP)  # unchanged file: a reload that changes nothing
            write(path, {"a": kitchen("a"), "b": kitchen("b"), "c": kitchen("c")})
            os.kill(process.pid, signal.SIGHUP)
            await until_listed("c.echo")
            path.write_text("servers: {a: {transport: stdio}}\n", encoding="utf-8")
            cli = [sys.executable, "-m", "gateway", "reload", "--url", url]
            refused = await anyio.run_process(cli, cwd=ROOT, check=False)
            assert refused.returncode == 1 and b"command" in refused.stdout
            write(path, {"a": kitchen("a")})
            applied = await anyio.run_process(cli, cwd=ROOT, check=False)
            assert applied.returncode == 0 and b'"removed"' in applied.stdout
            await until_listed("c.echo", present=False)
            assert text_of(await client.call_tool("a.echo", {"text": "alive"})) == "alive"
    finally:
        await stop(process)


async def test_the_file_watcher_catches_a_rewrite_that_leaves_the_files_stat_as_it_was(tmp_path: Path) -> None:
    path = write(tmp_path / "gateway.yaml", {"a": kitchen("a"), "b": kitchen("b")})
    async with reloading(path) as (gateway, client, heard):
        heard.mark()
        before = path.stat()
        write(path, {"a": kitchen("a"), "c": kitchen("c")})  # as long as before, rewritten in place
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # as if within one timestamp tick
        assert (path.stat().st_size, path.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
        with anyio.fail_after(15):
            # The watcher's reload adds c (found by the hash it makes once a second) and says so; a notice can also
            # be the start's, coalesced (fronts/notify.WINDOW_S): then the list does not hold c yet.
            while "c.echo" not in {t.name for t in (await client.list_tools(cache_mode="bypass")).tools}:
                await heard.event.wait()
                heard.mark()
        assert text_of(await client.call_tool("c.echo", {"text": "seen"})) == "seen"
        assert gateway.reloader is not None and gateway.reloader.last is not None
        assert gateway.reloader.last.added == ["c"]
