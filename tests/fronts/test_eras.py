"""Results shaped per negotiated protocol version: a real gateway process over raw stdio, each version a current
client sends; and the rules themselves on the models."""

import base64
import json
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp.types as types
import pytest
from mcp import Client

from gateway.fronts.eras import adapted, as_text
from tests.fronts.lanes.test_http import answer
from tests.fronts.test_stdio import Pipe, raw_gateway
from tests.harness import PYTHON, ROOT, gateway_params, kitchen, write_config
from tests.servers.conformance_content import AUDIO

pytestmark = pytest.mark.anyio

HANDSHAKE = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
CONFORMANCE = {"transport": "stdio", "command": PYTHON, "args": [str(ROOT / "tests" / "servers" / "conformance.py")]}
BIG = "x" * 30_000  # over the 20 KB inline limit: spilled, with a resource_link to the whole


async def opened(pipe: Pipe, version: str) -> dict[str, Any]:
    await pipe.send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
        }
    )
    answer = await pipe.receive()
    await pipe.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return answer


async def ask(pipe: Pipe, request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    await pipe.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    answer = await pipe.receive()
    assert answer["id"] == request_id and "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


async def progress_of(pipe: Pipe, request_id: int) -> list[dict[str, Any]]:
    """The progress notifications a call with a progress token gets before its answer."""
    params = {"name": "c.test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": "p"}}
    await pipe.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})
    seen = []
    with anyio.fail_after(20):
        while "id" not in (message := json.loads(await pipe.stdout.receive_until(b"\n", 1_000_000))):
            if message["method"] == "notifications/progress":
                seen.append(message["params"])
    assert message["id"] == request_id and "result" in message, message
    return seen


def kinds(result: dict[str, Any]) -> list[str]:
    return [block["type"] for block in result["content"]]


@pytest.mark.parametrize("version", HANDSHAKE)
async def test_every_result_holds_only_what_the_negotiated_version_defines(tmp_path: Path, version: str) -> None:
    servers = {"c": CONFORMANCE, "k": kitchen("k")}
    async with raw_gateway(tmp_path, servers) as pipe:
        assert (await opened(pipe, version))["result"]["protocolVersion"] == version
        spilled = await ask(pipe, 2, "tools/call", {"name": "k.echo", "arguments": {"text": BIG}})
        fidelity = await ask(pipe, 3, "tools/call", {"name": "c.fidelity", "arguments": {}})
        listed = await ask(pipe, 4, "resources/list", {})
        tools = await ask(pipe, 5, "tools/list", {})
        progress = await progress_of(pipe, 6)

    links = version >= "2025-06-18"
    assert ("resource_link" in kinds(spilled)) is links
    if not links:  # the spill link is told in words: where the whole output is and how to read it
        told = [b["text"] for b in spilled["content"] if "gateway://outputs/" in b.get("text", "")]
        assert told and "Read it with resources/read" in told[0] and "30,000 bytes" in told[0], spilled
    expected = ["text", "image", "audio", "resource_link", "resource"]
    if not links:
        expected[3] = "text"
    if version == "2024-11-05":
        expected[2] = "text"
    assert kinds(fidelity)[: len(expected)] == expected
    assert ("structuredContent" in fidelity) is links
    assert ("_meta" in fidelity["content"][1]) is links  # content _meta: 2025-06-18
    assert fidelity["_meta"]["fixture/result"] is True  # a result's _meta exists in every version
    assert any("title" in r for r in listed["resources"]) is links
    assert [p["progress"] for p in progress] == [0, 50, 100]
    assert all(("message" in p) is (version != "2024-11-05") for p in progress)  # a progress message: 2025-03-26
    if not links:
        assert not [t["name"] for t in tools["tools"] if {"title", "outputSchema", "_meta"} & t.keys()]


async def test_a_2026_era_client_gets_the_link_and_structured_content_as_the_server_sent_them(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"c": CONFORMANCE})
    async with Client(gateway_params(config)) as client:
        assert client.protocol_version == "2026-07-28"
        result = await client.call_tool("c.fidelity", {})
    assert [type(b).__name__ for b in result.content][:5] == [
        "TextContent",
        "ImageContent",
        "AudioContent",
        "ResourceLink",
        "EmbeddedResource",
    ]
    assert result.structured_content == {"kinds": 5, "nested": {"list": [1, 2.5, None, "x"]}}


RICH = types.CallToolResult(
    content=[
        types.TextContent(text="[gateway] a hint", annotations=types.Annotations(priority=1, last_modified="2026")),
        types.ResourceLink(uri="gateway://outputs/o1", name="output-o1", size=1234, icons=[types.Icon(src="i")]),
    ],
    structured_content={"a": 1},
)
TOOL = types.Tool(
    name="t",
    title="T",
    input_schema={"type": "object"},
    output_schema={"type": "object"},
    annotations=types.ToolAnnotations(read_only_hint=True),
    icons=[types.Icon(src="i")],
    execution=types.ToolExecution(task_support="optional"),
)


def wire(model: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = model.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped


def test_fields_are_dropped_in_the_version_before_the_one_that_added_them() -> None:
    fields = {v: sorted(wire(adapted(TOOL, v))) for v in [*HANDSHAKE, "2026-07-28"]}
    assert fields["2024-11-05"] == ["inputSchema", "name"]
    assert fields["2025-03-26"] == ["annotations", "inputSchema", "name"]
    assert fields["2025-06-18"] == ["annotations", "inputSchema", "name", "outputSchema", "title"]
    assert fields["2025-11-25"] == fields["2026-07-28"] == sorted(wire(TOOL))


def test_structured_content_becomes_json_text_when_only_hints_carry_text() -> None:
    old = wire(adapted(RICH, "2025-03-26"))
    assert "structuredContent" not in old
    assert [b["type"] for b in old["content"]] == ["text", "text", "text"]
    assert json.loads(old["content"][0]["text"]) == {"a": 1}
    assert old["content"][1]["annotations"] == {"priority": 1}  # lastModified: 2025-06-18
    assert "1,234 bytes" in old["content"][2]["text"]
    assert adapted(RICH, "2025-11-25") is RICH  # nothing to do: the very object
    newer = wire(adapted(RICH, "2025-06-18"))
    assert "icons" not in newer["content"][1] and newer["structuredContent"] == {"a": 1}


def test_a_failed_call_and_an_unknown_version_pass_untouched() -> None:
    assert adapted(RICH, None) is RICH
    assert adapted(RICH, "1999-01-01") is RICH
    assert adapted(None, "2024-11-05") is None


def test_audio_told_as_text_gives_the_decoded_size_its_base64_padding_left_out() -> None:
    told = as_text(types.AudioContent(data=AUDIO, mime_type="audio/wav"), "2024-11-05")
    assert f"[audio/wav audio, {len(base64.b64decode(AUDIO))} bytes, not shown" in told  # 44, not 45


@pytest.mark.parametrize("path", ["lane", "sdk"])
async def test_over_http_a_2025_03_26_session_gets_the_spill_link_as_text_on_either_path(
    kitchen_gateway: str, path: str
) -> None:
    version = "2025-03-26"
    accept = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    init = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
    meta = {"_meta": {"progressToken": "p"}} if path == "sdk" else {}  # a progress token: the SDK serves it
    async with httpx2.AsyncClient(base_url=kitchen_gateway, timeout=30) as http:
        opened = await http.post(
            "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}, headers=accept
        )
        assert answer(opened)["result"]["protocolVersion"] == version
        session = {**accept, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": version}
        await http.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        first = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "k.echo", "arguments": {}}}
        await http.post("/mcp", json=first, headers=session)  # the session registered, the driver delivered
        params = {"name": "k.echo", "arguments": {"text": BIG}, **meta}
        reply = await http.post(
            "/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}, headers=session
        )
    assert reply.headers["content-type"].startswith("text/event-stream" if path == "sdk" else "application/json")
    result = answer(reply)["result"]
    assert "resource_link" not in kinds(result)
    assert any(
        "gateway://outputs/" in b.get("text", "") and "Read it with resources/read" in b["text"]
        for b in result["content"]
    )
