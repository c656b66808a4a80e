"""`gateway login SERVER` and `gateway logout SERVER` (`gateway.app.login`): a stdio user signs in through a loopback
callback of the command's own, the tokens land sealed in the configured store for this machine's user, where the
stdio gateway's calls find them, and logout forgets them. A stdio session without a page says to run the command."""

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import mcp.types as types
import pytest
from cryptography.fernet import Fernet
from mcp import Client

from gateway.app.login import login
from gateway.config import load_config
from gateway.downstreams.oauth_tokens import token_key
from gateway.session import os_user
from tests.harness import PYTHON, ROOT, gateway_params, hints_of, text_of, write_config
from tests.servers.guarded import serving

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving(tmp_path_factory.mktemp("guarded")) as base:
        yield base


async def whoami(config: Path, env: dict[str, str]) -> types.CallToolResult:
    async with Client(gateway_params(config, env=env), mode="legacy") as client:
        return await client.call_tool("forge.whoami", {})


async def test_login_keeps_this_users_tokens_sealed_for_stdio_calls_and_logout_forgets_them(
    guarded: str, tmp_path: Path
) -> None:
    server = {"transport": "http", "url": f"{guarded}/mcp", "auth": {"type": "oauth"}}
    config = write_config(tmp_path, {"forge": server}, think={"state_dir": str(tmp_path / "state")})
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GATEWAY_TOKEN_KEY": Fernet.generate_key().decode()}
    command = [PYTHON, "-m", "gateway"]
    kept = tmp_path / "state" / "tokens" / token_key(os_user(), "forge")
    with anyio.fail_after(90):
        before = await whoami(config, env)
        wanted = "Sign in to forge: ask the user to run `gateway login forge` in a terminal"
        assert before.is_error and any(wanted in text for text in hints_of(before))
        argv = [*command, "login", "forge", "--config", str(config), "--no-browser"]
        async with await anyio.open_process(argv, env=env, cwd=str(ROOT)) as process:
            assert process.stdout is not None
            line = (await process.stdout.receive()).decode()  # the link, printed before it waits
            assert line.startswith("Sign in to forge: "), line
            async with httpx2.AsyncClient() as browser:
                back = await browser.get(f"{line.split(': ', 1)[1].strip()}&login_hint=me")
                assert back.status_code == 302 and back.headers["location"].startswith("http://127.0.0.1:")
                done = await browser.get(back.headers["location"])
            assert done.status_code == 200 and f"Signed in to forge as {os_user().name}" in done.text
            assert await process.wait() == 0
        assert kept.exists() and b"access_token" not in kept.read_bytes()
        assert json.loads(text_of(await whoami(config, env))) == {
            "user": "me"
        }  # the stdio gateway calls as the signed-in user
        out = await anyio.run_process([*command, "logout", "forge", "--config", str(config)], env=env, cwd=str(ROOT))
        assert out.returncode == 0 and not kept.exists()


async def test_the_callback_port_in_the_link_is_already_the_commands_own_when_the_link_is_said(
    guarded: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between the link and the redirect back, no other program can take the callback's port: it is bound before the
    link is said (a port probed for, let go and bound again later could be taken in between)."""
    monkeypatch.setenv("GATEWAY_TOKEN_KEY", Fernet.generate_key().decode())
    server = {"transport": "http", "url": f"{guarded}/mcp", "auth": {"type": "oauth"}}
    config = load_config(write_config(tmp_path, {"forge": server}, think={"state_dir": str(tmp_path / "state")}))
    links: list[str] = []
    bindable: list[bool] = []
    said = anyio.Event()

    def say(line: str) -> None:
        if line.startswith("Sign in to forge: "):
            links.append(line.split(": ", 1)[1].strip())
            callback = parse_qs(urlsplit(links[0]).query)["redirect_uri"][0]
            with socket.socket() as other:
                try:
                    other.bind(("127.0.0.1", urlsplit(callback).port or 0))
                    bindable.append(True)
                except OSError:
                    bindable.append(False)
            said.set()

    code: list[int] = []

    async def signing_in() -> None:
        code.append(await login(config, "forge", browse=False, say=say))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(signing_in)
            await said.wait()
            async with httpx2.AsyncClient(follow_redirects=True) as browser:
                done = await browser.get(f"{links[0]}&login_hint=me")
    assert bindable == [False]
    assert done.status_code == 200 and code == [0]
