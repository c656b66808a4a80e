"""The gateway as the client under test of the conformance suite's `auth/*` client scenarios.

The suite starts an authorization server and a protected MCP server per scenario, then `tests/conformance_shim.py`
with the server's URL, which hands it to `run` here, in the test's process. It does what a stdio user of the gateway
does, with the gateway's own code in this process instead of two more interpreters per scenario:

1. a config with that URL as a downstream with `auth: {type: oauth}` (the pre-registered client when the scenario
   gives one, and a client ID metadata document URL the authorization server may choose to use);
2. `gateway login` (`gateway.app.login.login`, what the command runs), its printed link followed with httpx (the
   suite's authorization server redirects without a consent page) to the sign-in's loopback callback;
3. the gateway with an MCP client on its front, calling every tool of the server through it; a call answered "Sign in
   to conf" is followed by `gateway login` and the call again, as the answer tells a person to.

The suite scores what it saw on the wire; `run` says what went wrong on the client's side.
"""

import json
import tempfile
from pathlib import Path

import anyio
import httpx2
import yaml
from mcp import Client
from mcp.client.session import IncomingMessage
from mcp.types import CallToolResult, TextContent, ToolListChangedNotification

from gateway.app.gateway import Gateway
from gateway.app.login import login
from gateway.config import load_config
from gateway.downstreams.state import State

CIMD_URL = "https://conformance-test.local/client-metadata.json"
"""The client ID metadata document URL the suite's `auth/basic-cimd` expects a client to use as its client id."""
SERVER = "conf"
TOKEN_KEY_ENV = "CONFORMANCE_TOKEN_KEY"
"""Where the scenarios' configs say the key sealing their tokens is (`auth.token_key_env`): the driver sets it."""
STEP_S = 60.0
"""A step's bound (a sign-in, the calls): generous, as four scenarios share a loaded machine; the suite's own timeout
(`tests/conformance_auth.SCENARIO_S`) bounds the whole."""


def texts(result: CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, TextContent)]


def config_for(url: str, env: dict[str, str], folder: Path) -> Path:
    """The stdio user's config for the scenario (`env`: the suite's `MCP_CONFORMANCE_*` variables)."""
    context = json.loads(env.get("MCP_CONFORMANCE_CONTEXT", "{}"))
    auth: dict[str, object] = {"type": "oauth", "client_metadata_url": CIMD_URL, "token_key_env": TOKEN_KEY_ENV}
    if "client_id" in context:
        auth.update(client_id=context["client_id"], client_secret=context.get("client_secret"))
    era = "modern" if env.get("MCP_CONFORMANCE_PROTOCOL_VERSION") == "2026-07-28" else "legacy"
    server = {"transport": "http", "url": url, "protocol": era, "auth": auth}
    config = {"servers": {SERVER: server}, "think": {"state_dir": str(folder / "state")}}
    (folder / "gateway.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return folder / "gateway.yaml"


async def sign_in(config: Path, log: list[str], server: str = SERVER) -> None:
    """`gateway login` as a person runs it, the browser played by httpx following the redirects (an authorization
    server that approves without a consent page); what it says goes to `log`."""
    said: list[str] = []
    spoke, code = anyio.Event(), [1]

    def say(line: str) -> None:
        said.append(line)
        log.append(line)
        spoke.set()

    async def signing_in() -> None:
        code[0] = await login(load_config(config), server, browse=False, say=say)
        spoke.set()

    with anyio.fail_after(STEP_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(signing_in)
            await spoke.wait()
            if not said or not said[0].startswith(f"Sign in to {server}: "):
                raise RuntimeError(f"gateway login printed no link: {said}")
            async with httpx2.AsyncClient(follow_redirects=True, timeout=STEP_S) as browser:
                done = await browser.get(said[0].split(": ", 1)[1].strip())
            log.append(f"callback: {done.status_code} {done.text}")
    if code[0] != 0:
        raise RuntimeError(f"gateway login failed: {said[-1]}")


async def listed(client: Client) -> list[str]:
    tools = (await client.list_tools(cache_mode="refresh")).tools
    return [tool.name for tool in tools if tool.name.startswith(f"{SERVER}.")]


async def call_tools(config: Path, log: list[str]) -> list[str]:
    """Every tool of the server, called through the gateway: what went wrong, per tool. Where the gateway says the
    person must sign in (again: the grant stopped working), a call's answer or the server's tools missing from the
    list, they do what a person would, `gateway login` and the call again on the same session, once.

    The client speaks the handshake era to the gateway whatever the scenario's (the era under test is the gateway's
    with the server), so the gateway's `tools/list_changed` reaches it when the server's tools come back."""
    changed = [anyio.Event()]

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, ToolListChangedNotification):
            changed[-1].set()

    signed_in_again = False
    gateway = Gateway(load_config(config))
    with anyio.fail_after(3 * STEP_S):
        async with gateway.running(), Client(gateway.front.server, mode="legacy", message_handler=on_message) as client:
            tools = await listed(client)
            if not tools:  # the grant stopped working before the gateway connected
                signed_in_again = True
                changed.append(anyio.Event())
                await sign_in(config, log)
                tools = await listed(client)
                # Not connected yet: the gateway connects on its own time, and says when its list changes. Connected
                # and listing none (the server refuses even the new grant): nothing will change by itself.
                if not tools and gateway.registry.downstreams[SERVER].state is not State.UP:
                    with anyio.fail_after(STEP_S):
                        await changed[-1].wait()
                    tools = await listed(client)
            if not tools:
                return ["the gateway listed none of the server's tools"]
            failed = []
            for name in tools:
                result = await client.call_tool(name, {})
                if (
                    result.is_error
                    and any(f"Sign in to {SERVER}" in text for text in texts(result))
                    and not signed_in_again
                ):
                    signed_in_again = True
                    await sign_in(config, log)
                    result = await client.call_tool(name, {})
                if result.is_error:
                    failed.append(f"{name} through the gateway: {texts(result)}")
            return failed


async def run(url: str, env: dict[str, str]) -> tuple[list[str], str]:
    """One scenario, the gateway as its client: (what went wrong, the log for the suite's report)."""
    log: list[str] = []
    with tempfile.TemporaryDirectory(prefix="conformance-client-") as folder:
        config = config_for(url, env, Path(folder))
        try:
            await sign_in(config, log)
            failed = await call_tools(config, log)
        except Exception as exc:  # noqa: BLE001 -- whatever it was, the suite's report says it
            failed = [f"{type(exc).__name__}: {exc}"]
    return failed, "\n".join([*log, *failed, ""])
