"""An install cut short by the gateway's end leaves nothing running and nothing taken for built: pip (and uv) run
the real install in processes of their own (pip's `--python` runs a second pip; both run build backends in
subprocesses), and each of them ends with the gateway, however it is ended. Real installs of a local sdist held
mid-build (`tests.held_install`)."""

import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.downstreams.state import State
from tests.harness import MEASURED, PYTHON, ROOT, connected, text_of, write_config
from tests.held_install import SPEC, HeldInstall, Proc, end, held_install, lineage, survivors

# Each case runs pip for real (seconds each, more on a loaded machine).
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]


@pytest.fixture
async def held(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[HeldInstall]:
    async with held_install(tmp_path / "held", monkeypatch) as held:
        yield held


async def test_leaving_a_running_gateway_mid_install_ends_the_whole_install_and_the_next_start_builds_it_anew(
    held: HeldInstall, tmp_path: Path
) -> None:
    config = write_config(tmp_path, {"held": {"package": SPEC}}, limits={"startup_wait_s": 0})
    install: list[Proc] = []
    try:
        with anyio.fail_after(200):
            async with Gateway(load_config(config)).running():
                install = lineage(await held.started(), os.getpid())
        assert len(install) >= 2, install  # the backend and the pip(s) above it
        assert survivors(install) == []
    finally:
        end(install)
    assert not held.env().ready()  # cut short: never stamped

    held.release()
    again = write_config(tmp_path, {"held": {"package": SPEC}}, limits={"startup_wait_s": 200})
    async with connected(again, within_s=200) as (gateway, client):
        assert gateway.registry.downstreams["held"].state is State.UP, gateway.registry.downstreams["held"].last_error
        assert text_of(await client.call_tool("held.echo", {"text": "built anew"})) == "built anew"
    assert held.env().ready()


@pytest.mark.parametrize("ending", ["SIGTERM", "stdin closed"])  # Ctrl-C ends it as SIGTERM does (serve.py)
async def test_a_serving_gateway_ended_mid_install_leaves_no_process_of_the_install(
    held: HeldInstall, tmp_path: Path, ending: str
) -> None:
    config = write_config(tmp_path, {"held": {"package": SPEC}}, limits={"startup_wait_s": 0})
    argv = [PYTHON, "-m", "gateway", "serve", "--config", str(config), "--log-level", "WARNING"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), **MEASURED}
    install: list[Proc] = []
    # Pipes, as a client starts it.
    gateway = await anyio.open_process(argv, cwd=ROOT, env=env, stderr=None)
    try:
        with anyio.fail_after(200):
            install = lineage(await held.started(), gateway.pid)
            if ending == "stdin closed":
                assert gateway.stdin is not None
                await gateway.stdin.aclose()
            else:
                gateway.send_signal(signal.Signals[ending])
            await gateway.wait()
        assert len(install) >= 2, install
        assert survivors(install) == []
    finally:
        end(install)
        if gateway.returncode is None:
            gateway.kill()
        with anyio.CancelScope(shield=True):
            await gateway.aclose()
    assert not held.env().ready()
