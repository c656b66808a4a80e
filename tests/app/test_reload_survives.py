"""A reload survives whatever the config file comes to hold: each is a refused reload naming the file and the
cause, the running config and its servers stay, and the reloader takes the next one. A report whose requester is
gone is dropped. A component task that dies anyway turns /healthz `degraded` (503) and the rest serves on."""

import gc
import os
import signal
import warnings
from pathlib import Path

import anyio
import httpx2
import pytest

from gateway.app import reload as reload_module
from gateway.app.gateway import Gateway
from gateway.app.reload import Report
from gateway.app.serve import http_app
from gateway.config import load_config
from gateway.config.reading import BOUNDS
from gateway.downstreams.downstream import Downstream
from gateway.fronts.auth.configured import authenticator
from tests.app.test_reload import reload, reloading, write
from tests.harness import BOMB_CONFIG, PYTHON, kitchen, text_of, wait_for

pytestmark = pytest.mark.anyio

UNREADABLE: list[tuple[str, bytes, str]] = [  # what a file may hold, and the cause its refusal names
    ("a comment saved as Latin-1", b"servers: {}\n# caf\xe9\n", "line 2: byte 17 is 0xe9, not UTF-8"),
    ("nesting 1,000 deep", b"servers: " + b"[" * 1000 + b"]" * 1000 + b"\n", "nested more than 64 levels deep"),
    ("an alias bomb", BOMB_CONFIG.encode(), "over the limit of 100,000"),
    ("a 5,000-digit number", b"limits: {max_inline_bytes: " + b"9" * 5000 + b"}\n", "(4300 digits)"),
    ("an alias inside its own anchor", b"servers: &s {k: *s}\n", "a cycle"),
    ("UTF-16", "servers: {}\n".encode("utf-16"), "it looks like UTF-16"),
    ("a NUL byte", b"servers: {}\n\x00\n", "U+0000"),
    ("a NUL in a folder", b'servers: {a: {transport: stdio, command: x, cwd: "a\\0b"}}\n', "embedded null byte"),
    ("nothing (a file caught mid-write)", b"", "(file): empty"),
    ("more than the limit", b"servers: {}\n" + b"#" * BOUNDS.max_bytes, "over the limit of 1,048,576"),
]


async def test_whatever_the_file_holds_a_reload_is_refused_naming_it_and_the_gateway_serves_on(tmp_path: Path) -> None:
    path = write(tmp_path / "gateway.yaml", {"a": kitchen("a")})
    async with reloading(path) as (gateway, client, _):
        reloader = gateway.reloader
        assert reloader is not None
        path.write_bytes(UNREADABLE[0][1])  # the file watcher reloads it on its own: this killed the gateway
        await wait_for(lambda: reloader.last is not None, 15, "the file watcher's reload")
        assert reloader.last is not None and not reloader.last.ok and UNREADABLE[0][2] in str(reloader.last.error)

        async def refused(what: str, cause: str) -> None:
            report = await reload(gateway)
            assert not report.ok and f"{path}: " in str(report.error) and cause in str(report.error), (what, report)
            assert text_of(await client.call_tool("a.echo", {"text": what})) == what

        for what, content, cause in UNREADABLE:
            path.write_bytes(content)
            await refused(what, cause)
        path.unlink()
        await refused("the file deleted", "(file): cannot read: No such file or directory")
        path.mkdir()
        await refused("a folder where the file was", "(file): cannot read: Is a directory")
        path.rmdir()
        os.mkfifo(path)  # reading it would wait for a writer for good
        await refused("a FIFO where the file was", "(file): not a regular file")
        path.unlink()
        write(path, {"a": kitchen("a"), "b": kitchen("b")})
        report = await reload(gateway)
        assert report.ok and report.added == ["b"], report
        assert text_of(await client.call_tool("b.echo", {"text": "added"})) == "added"
        assert gateway.health()["status"] == "ok" and "died" not in gateway.health()


SILENT = (  # a server that starts, says where it is, and never answers
    "import os, sys; open(sys.argv[1] + '.tmp', 'w').write(str(os.getpid())); "
    "os.replace(sys.argv[1] + '.tmp', sys.argv[1]); sys.stdin.read()"
)


async def test_a_report_whose_requester_is_gone_is_dropped_and_the_reloader_takes_the_next(tmp_path: Path) -> None:
    path = write(tmp_path / "gateway.yaml", {"a": kitchen("a")})
    started = tmp_path / "silent.pid"
    silent = {"transport": "stdio", "command": PYTHON, "args": ["-c", SILENT, str(started)], "connect_timeout_s": 60}
    async with reloading(path) as (gateway, client, _):
        write(path, {"a": kitchen("a"), "silent": silent})  # the reload waits for it to come up
        async with anyio.create_task_group() as requester:
            requester.start_soon(reload, gateway)
            await wait_for(started.exists, 15, "the reload starting the silent server")
            requester.cancel_scope.cancel()  # the requester goes away mid-reload (a client, a shutdown)
        os.kill(int(started.read_text()), signal.SIGKILL)  # its first attempt fails: the reload ends and answers
        report = await reload(gateway)  # the answer to nobody raised BrokenResourceError and ended the reloader
        assert report.ok and report.added == [], report
        assert text_of(await client.call_tool("a.echo", {"text": "on"})) == "on"
        assert "died" not in gateway.health()


async def test_a_component_that_died_turns_healthz_degraded_503_and_calls_are_still_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bug = anyio.Event()

    async def broken(path: Path, reload: object) -> None:
        await bug.wait()
        raise RuntimeError("a bug in the file watcher")

    monkeypatch.setattr(reload_module, "watch_file", broken)  # no file content ends the reloader any more: a bug does
    path = write(tmp_path / "gateway.yaml", {"a": kitchen("a")})
    started = tmp_path / "silent.pid"
    silent = {"transport": "stdio", "command": PYTHON, "args": ["-c", SILENT, str(started)], "connect_timeout_s": 60}
    async with reloading(path) as (gateway, client, _):
        write(path, {"a": kitchen("a"), "silent": silent})
        reports: list[Report] = []

        async def request() -> None:
            reports.append(await reload(gateway))

        async with anyio.create_task_group() as requesters:
            requesters.start_soon(request)  # taken, and held by the silent server
            requesters.start_soon(request)  # queued behind it
            await wait_for(started.exists, 15, "the reload starting the silent server")
            bug.set()
        assert [r.ok for r in reports] == [False, False] and all("restart the gateway" in str(r.error) for r in reports)
        assert gateway.components.died == {"reloader": "RuntimeError: a bug in the file watcher"}
        assert text_of(await client.call_tool("a.echo", {"text": "served"})) == "served"
        assert "restart the gateway" in str((await reload(gateway)).error)  # answered at once, never left to hang
        app = http_app(gateway, authenticator(gateway.config.auth, gateway.config.listen))
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app), base_url="http://127.0.0.1:1") as http:
            response = await http.get("/healthz")
    assert response.status_code == 503
    health = response.json()
    assert health["status"] == "degraded" and health["died"] == {"reloader": "RuntimeError: a bug in the file watcher"}
    assert health["servers"]["a"]["state"] == "up"


async def test_an_unforeseen_failure_of_a_reload_is_a_refused_reload_naming_the_file_and_the_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "gateway.yaml", {"a": kitchen("a")})
    async with reloading(path) as (gateway, client, _):

        def unforeseen(path: Path, *, whole: bool) -> None:
            raise RecursionError("maximum recursion depth exceeded")

        with monkeypatch.context() as patched:  # stands in for whatever reading or validating may still raise
            patched.setattr(reload_module, "load_config", unforeseen)
            report = await reload(gateway)
        assert not report.ok and report.error == (
            f"{path}: the reload failed (RecursionError: maximum recursion depth exceeded); see the gateway's log"
        )

        async def stuck(downstream: Downstream) -> None:
            raise OSError("the old process would not close")

        monkeypatch.setattr(reload_module, "_retire", stuck)  # a step left running after the reload answered
        write(path, {})
        assert (await reload(gateway)).removed == ["a"]
        write(path, {"b": kitchen("b")})
        assert (await reload(gateway)).added == ["b"]
        assert text_of(await client.call_tool("b.echo", {"text": "on"})) == "on"
        assert gateway.health()["status"] == "ok" and "died" not in gateway.health()


async def test_a_gateway_run_off_the_main_thread_reloads_without_sighup(tmp_path: Path) -> None:
    path = write(tmp_path / "gateway.yaml", {})

    async def embedded() -> tuple[bool, dict[str, object]]:
        gateway = Gateway(load_config(path), config_path=path)
        async with gateway.running():  # no signal handlers off the main thread: that ended the reloader
            return (await reload(gateway)).ok, gateway.health()

    with anyio.fail_after(60):
        ok, health = await anyio.to_thread.run_sync(anyio.run, embedded)
    assert ok and health["status"] == "ok" and "died" not in health


async def test_a_reload_request_cancelled_before_the_reloader_took_it_leaves_no_stream_open(tmp_path: Path) -> None:
    path = write(tmp_path / "gateway.yaml", {"a": kitchen("a")})
    async with reloading(path) as (gateway, client, _):
        assert gateway.reloader is not None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            with anyio.CancelScope() as scope:
                scope.cancel()  # cancelled at the hand-over's checkpoint: its reply stream was never the reloader's
                await gateway.reloader.reload()
            gc.collect()
        assert not [w for w in caught if "MemoryObject" in str(w.message)], [str(w.message) for w in caught]
        report = await reload(gateway)
        assert report.ok, report
        assert text_of(await client.call_tool("a.echo", {"text": "on"})) == "on"
