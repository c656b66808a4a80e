"""The gateway as the client under test of the conformance suite's `auth/*` client scenarios.

The suite starts an authorization server and a protected MCP server per scenario and runs this with the server's URL
as its last argument (`--command "python -m tests.conformance_client"`, from the repository root; the scenario's
name, era and any pre-registered client in `MCP_CONFORMANCE_*`). It does what a stdio user of the gateway does:

1. a config with that URL as a downstream with `auth: {type: oauth}` (the pre-registered client when the scenario
   gives one, and a client ID metadata document URL the authorization server may choose to use);
2. `gateway login conf --no-browser`, following the printed link with httpx (the suite's authorization server
   redirects without a consent page) to the command's loopback callback;
3. the gateway over stdio with an MCP client, calling every tool of the server through it; a call answered "Sign in
   to conf" is followed by `gateway login` and the call again, as the answer tells a person to.

Exit 0 when the calls answered without error; the suite scores what it saw on the wire either way.
"""

import json
import os
import sys
import tempfile
from pathlib import Path

import anyio
import httpx2
import yaml
from cryptography.fernet import Fernet
from mcp import Client, StdioServerParameters
from mcp.client.session import IncomingMessage
from mcp.types import CallToolResult, TextContent, ToolListChangedNotification

# Not `tests.harness`: it imports the whole gateway, which this process only starts (twice per scenario, under load).
ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable

CIMD_URL = "https://conformance-test.local/client-metadata.json"
"""The client ID metadata document URL the suite's `auth/basic-cimd` expects a client to use as its client id."""
SERVER = "conf"
STEP_S = 60.0
"""A step's bound (a process started, a sign-in, the calls): generous, as four scenarios share a loaded machine; the
suite's own timeout (`tests/conformance_auth.SCENARIO_S`) bounds the whole."""


def gateway_params(config: Path, env: dict[str, str]) -> StdioServerParameters:
    argv = ["-m", "gateway", "serve", "--config", str(config), "--log-level", "WARNING"]
    return StdioServerParameters(command=PYTHON, args=argv, cwd=str(ROOT), env=env)


def texts(result: CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, TextContent)]


def config_for(url: str, folder: Path) -> Path:
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT", "{}"))
    auth: dict[str, object] = {"type": "oauth", "client_metadata_url": CIMD_URL}
    if "client_id" in context:
        auth.update(client_id=context["client_id"], client_secret=context.get("client_secret"))
    era = "modern" if os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION") == "2026-07-28" else "legacy"
    server = {"transport": "http", "url": url, "protocol": era, "auth": auth}
    config = {"servers": {SERVER: server}, "think": {"state_dir": str(folder / "state")}}
    (folder / "gateway.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return folder / "gateway.yaml"


async def login(config: Path, env: dict[str, str], server: str = SERVER) -> None:
    """`gateway login` as a person would run it, the browser played by httpx following the redirects (an
    authorization server that approves without a consent page)."""
    argv = [PYTHON, "-m", "gateway", "login", server, "--config", str(config), "--no-browser"]
    async with await anyio.open_process(argv, env=env, cwd=str(ROOT), stderr=None) as process:
        assert process.stdout is not None
        with anyio.fail_after(STEP_S):
            line = (await process.stdout.receive()).decode()
        if not line.startswith(f"Sign in to {server}: "):
            raise SystemExit(f"gateway login printed no link: {line!r} (exit {await process.wait()})")
        async with httpx2.AsyncClient(follow_redirects=True, timeout=STEP_S) as browser:
            done = await browser.get(line.split(": ", 1)[1].strip())
        print(f"callback: {done.status_code} {done.text}", file=sys.stderr)  # noqa: T201 -- the suite keeps it
        with anyio.fail_after(STEP_S):
            if await process.wait() != 0:
                raise SystemExit(f"gateway login failed (exit {process.returncode})")


async def listed(client: Client) -> list[str]:
    tools = (await client.list_tools(cache_mode="refresh")).tools
    return [tool.name for tool in tools if tool.name.startswith(f"{SERVER}.")]


async def call_tools(config: Path, env: dict[str, str]) -> list[str]:
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
    with anyio.fail_after(3 * STEP_S):
        async with Client(gateway_params(config, env), mode="legacy", message_handler=on_message) as client:
            tools = await listed(client)
            if not tools:  # the grant stopped working before the gateway connected
                signed_in_again = True
                changed.append(anyio.Event())
                await login(config, env)
                tools = await listed(client)
                if not tools:  # the gateway reconnects on its own time, and says when its list changes
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
                    await login(config, env)
                    result = await client.call_tool(name, {})
                if result.is_error:
                    failed.append(f"{name} through the gateway: {texts(result)}")
            return failed


async def main(url: str) -> None:
    with tempfile.TemporaryDirectory(prefix="conformance-client-") as folder:
        config = config_for(url, Path(folder))
        env = {**os.environ, "PYTHONPATH": str(ROOT), "GATEWAY_TOKEN_KEY": Fernet.generate_key().decode()}
        await login(config, env)
        failed = await call_tools(config, env)
    if failed:
        raise SystemExit("\n".join(failed))


if __name__ == "__main__":
    anyio.run(main, sys.argv[-1])
