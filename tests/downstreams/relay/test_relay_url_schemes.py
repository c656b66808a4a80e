"""A URL-mode elicitation reaches the client only with an `https:` URL, or `http:` to this machine: any other is
refused with the reason, to the server (handshake era: the error of its request; 2026 era: the call fails saying
why) and in a notice to the client, which is never asked. Both eras of server, both eras of client."""

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest

from tests.downstreams.relay.clients import Person
from tests.fronts.test_stdio import raw_gateway
from tests.harness import PYTHON, ROOT, hints_of, http_client, http_gateway, text_of, write_config

RELAYING: dict[str, Any] = {
    "transport": "stdio",
    "command": PYTHON,
    "args": ["-m", "tests.servers.relaying"],
    "env": {"PYTHONPATH": str(ROOT)},
    "cwd": str(ROOT),
}
RELAYED = (
    "only https: URLs, and http: to this machine (localhost, 127.0.0.0/8, [::1]), are relayed; the server must send one"
)
REFUSED = [
    pytest.param("javascript:alert(document.cookie)", "its URL is a javascript: URL", id="javascript"),
    pytest.param("JavaScript:alert(1)", "its URL is a javascript: URL", id="javascript-mixed-case"),
    pytest.param("java\tscript:alert(1)", "whitespace or control characters", id="javascript-with-a-tab"),
    pytest.param("file:///etc/passwd", "its URL is a file: URL", id="file"),
    pytest.param("data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==", "its URL is a data: URL", id="data"),
    pytest.param("http://login.example.test/", "plain http: to 'login.example.test'", id="http-elsewhere"),
    pytest.param("http://127.0.0.1.evil.test/", "plain http: to '127.0.0.1.evil.test'", id="http-lookalike"),
    pytest.param("https://bank.example@evil.test/", "user info before the host", id="userinfo"),
    pytest.param("//evil.test/path", "scheme-less", id="no-scheme"),
]
PAIRS = [("legacy", "old"), ("legacy", "new"), ("auto", "new")]
"""(client mode, server): pushed to a handshake-era client; a 2026-era server's round answered for a handshake-era
client by the gateway; and passed through to a 2026-era client."""

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    servers = {"old": {**RELAYING, "protocol": "legacy"}, "new": {**RELAYING, "protocol": "modern"}}
    async with http_gateway(write_config(tmp_path_factory.mktemp("urls"), servers)) as base:
        yield base


async def ask(gateway: str, mode: str, server: str, url: str) -> tuple[Person, types.CallToolResult]:
    ann = Person("ann")
    async with http_client(gateway, mode=mode, **ann.callbacks()) as client:
        with anyio.fail_after(30):
            result = await client.call_tool(f"{server}.test_url_elicitation", {"id": "sign-in", "url": url})
    return ann, result


@pytest.mark.parametrize(("mode", "server"), PAIRS)
@pytest.mark.parametrize(("url", "why"), REFUSED)
async def test_a_url_elicitation_the_client_must_not_open_is_refused_with_the_reason(
    gateway: str, mode: str, server: str, url: str, why: str
) -> None:
    ann, result = await ask(gateway, mode, server, url)
    assert ann.elicitations == []  # the client never saw it
    said = text_of(result)
    assert why in said
    if server == "old":  # the server's own request was refused, with the reason: it says what it was told
        assert said.startswith("url elicitation sign-in: refused: the gateway does not relay this URL-mode elicitation")
        assert any(why in hint and "refused" in hint for hint in hints_of(result))  # and the client is told
    else:  # a 2026-era server's round: the call cannot go on, and says why
        assert result.is_error and "test_url_elicitation" in said
    assert RELAYED in said or "user info" in said
    assert url not in said  # the refused URL itself is never shown to the client


@pytest.mark.parametrize(("mode", "server"), PAIRS)
@pytest.mark.parametrize("url", ["https://login.example.test/auth?x=1", "http://127.0.0.1:8765/cb", "http://[::1]/cb"])
async def test_https_and_loopback_http_urls_reach_the_client_unchanged(
    gateway: str, mode: str, server: str, url: str
) -> None:
    ann, result = await ask(gateway, mode, server, url)
    [params] = ann.elicitations
    assert isinstance(params, types.ElicitRequestURLParams) and params.url == url
    assert text_of(result) == "url elicitation sign-in: action=accept"


MODES = [
    pytest.param("2025-06-18", {}, False, id="2025-06-18-empty-means-form"),
    pytest.param("2025-11-25", {"form": {}}, False, id="2025-11-25-form-only"),
    pytest.param("2025-11-25", {"form": {}, "url": {}}, True, id="2025-11-25-form-and-url"),
]


@pytest.mark.parametrize(("version", "elicitation", "asked"), MODES)
async def test_a_url_elicitation_reaches_only_a_client_that_declared_url_mode(
    tmp_path: Path, version: str, elicitation: dict[str, Any], asked: bool
) -> None:
    """A raw stdio client, so its declaration is exactly the era's shape (an SDK declares both modes)."""
    seen: list[str] = []
    async with raw_gateway(tmp_path, {"old": {**RELAYING, "protocol": "legacy"}}) as pipe:
        client = {"name": "raw", "version": "0"}
        hello = {"protocolVersion": version, "capabilities": {"elicitation": elicitation}, "clientInfo": client}
        await pipe.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
        await pipe.receive()
        await pipe.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = {"name": "old.test_url_elicitation", "arguments": {"id": "sign-in"}}
        await pipe.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
        with anyio.fail_after(30):
            while "method" in (message := await pipe.receive()):  # a request to the client: answered as one would
                seen.append(message["params"].get("mode", "form"))
                await pipe.send({"jsonrpc": "2.0", "id": message["id"], "result": {"action": "accept"}})
    texts = [block["text"] for block in message["result"]["content"]]
    if asked:
        assert seen == ["url"] and texts[0] == "url elicitation sign-in: action=accept"
    else:
        assert seen == []
        assert texts[0].startswith("url elicitation sign-in: refused: the calling client declared elicitation without")
        assert any("asked for a url-mode elicitation, but this client declared elicitation without" in t for t in texts)
