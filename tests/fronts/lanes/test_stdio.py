"""The stdio front's lane: which requests it takes in each era (the SDK's own decisions), the same answers as
the SDK path over a real gateway's pipes in both eras, and cancellation reaching the downstream."""

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import anyio
import mcp.types as types
import pytest
from mcp import Client
from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY, SERVER_INFO_META_KEY

from adapters.pipe import NdjsonPipe
from gateway.fronts.lanes.stdio import StdioLane
from gateway.fronts.server import Front
from tests.clients.matrix import CLIENTS, NODE, WHO
from tests.fronts.test_stdio import INITIALIZE, Pipe, raw_gateway
from tests.harness import ROOT, gateway_params, kitchen, text_of, wait_for, write_config

pytestmark = pytest.mark.anyio

MODERN = {PROTOCOL_VERSION_META_KEY: "2026-07-28", CLIENT_CAPABILITIES_META_KEY: {}}


def request(method: str, params: dict[str, Any] | None = None, request_id: int = 7) -> types.JSONRPCRequest:
    return types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method=method, params=params)


def echo(**meta: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "k.echo", "arguments": {"text": "hi"}}
    return {**params, "_meta": meta} if meta else params


def lane() -> StdioLane:
    # The routing decisions need neither the front nor the pipe: only `take` runs calls.
    return StdioLane(cast(Front, None), cast(NdjsonPipe, None))


def test_a_handshake_connection_s_calls_take_the_lane_only_once_the_sdk_answered_initialize() -> None:
    routes = lane()
    assert routes.route(request("initialize", cast(dict[str, Any], INITIALIZE["params"]), 1)) is None
    assert routes.route(request("tools/call", echo())) is None  # the SDK answers calls before the handshake
    result = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "g", "version": "0"}}
    routes.answered(types.JSONRPCResponse(jsonrpc="2.0", id=1, result=result))
    assert routes.route(request("tools/call", echo())) == (echo(), "2025-06-18")
    assert routes.route(request("tools/call", echo(progressToken="p"))) is None  # progress: the SDK relays it
    assert routes.route(request("tools/call", echo(**MODERN))) is None  # the SDK refuses the envelope here
    assert routes.route(request("tools/call", {"arguments": {}})) is None  # no name: the SDK's error
    assert routes.route(request("tools/list")) is None


def test_a_2026_connection_s_calls_take_the_lane_when_their_envelope_passes_the_sdk_s_ladder() -> None:
    routes = lane()
    assert routes.route(request("tools/call", echo(**MODERN))) == (echo(**MODERN), "2026-07-28")
    assert routes.route(request("tools/call", echo(**{PROTOCOL_VERSION_META_KEY: "2026-07-28"}))) is None
    assert routes.route(request("tools/call", echo(**{**MODERN, PROTOCOL_VERSION_META_KEY: "2099-01-01"}))) is None
    assert routes.route(request("tools/call", echo())) is None
    assert routes.route(request("initialize", cast(dict[str, Any], INITIALIZE["params"]), 1)) is None


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
async def test_a_plain_tools_call_is_answered_by_the_lane_as_the_sdk_answers_it(tmp_path: Path, era: str) -> None:
    meta = MODERN if era == "2026-07-28" else {}
    async with raw_gateway(tmp_path) as pipe:
        if not meta:
            await pipe.send(INITIALIZE)
            assert (await pipe.receive())["result"]["protocolVersion"] == era
            await pipe.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        answers = []
        for n, extra in enumerate(({}, {}, {"progressToken": "p"})):  # the first carries the bootstrap
            params = {"name": "k.echo", "arguments": {"text": "hi"}, "_meta": {**meta, **extra}}
            await pipe.send({"jsonrpc": "2.0", "id": 10 + n, "method": "tools/call", "params": params})
            answers.append(await pipe.receive())
    lane_answer, sdk_answer = answers[1]["result"], answers[2]["result"]
    assert lane_answer == sdk_answer
    assert lane_answer["content"] == [{"type": "text", "text": "hi"}]
    if meta:
        assert lane_answer["resultType"] == "complete"
        assert lane_answer["_meta"][SERVER_INFO_META_KEY]["name"] == "mcp-gateway"


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_client_abandoning_a_call_cancels_it_downstream(tmp_path: Path, mode: str) -> None:
    events = tmp_path / "events.log"
    config = write_config(tmp_path, {"k": kitchen("k", events=events)})
    async with Client(gateway_params(config), mode=mode) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "k.slow", {"steps": 100, "delay_s": 0.1})
            await wait_for(lambda: events.exists() and "call slow" in events.read_text(), what="slow started")
            tg.cancel_scope.cancel()
        await wait_for(lambda: "cancelled slow" in events.read_text(), within_s=10, what="downstream cancelled")
        assert text_of(await client.call_tool("k.echo", {"text": "after"})) == "after"


CONFORMANCE = {
    "transport": "stdio",
    "command": sys.executable,
    "args": [str(ROOT / "tests" / "servers" / "conformance.py")],
    "env": {"PYTHONPATH": str(ROOT)},
    "cwd": str(ROOT),
    "protocol": "legacy",
}
ASKS = {
    "test_roots": (
        "roots/list",
        {"roots": [{"uri": "file:///work/project", "name": "project"}]},
        "file:///work/project",
    ),
    "test_sampling": (
        "sampling/createMessage",
        {"role": "assistant", "content": {"type": "text", "text": "sampled!"}, "model": "m"},
        "sampled!",
    ),
    "test_elicitation": ("elicitation/create", {"action": "accept", "content": {"response": "yes"}}, "yes"),
}


@pytest.mark.parametrize("tool", sorted(ASKS))
async def test_a_call_sent_with_initialized_in_one_write_is_served_with_the_declared_capabilities(
    tmp_path: Path, tool: str
) -> None:
    """A client's `notifications/initialized` and first call in one write: the call is served knowing what the
    client declared at `initialize`, so the downstream's question reaches the client."""
    method, answer, expected = ASKS[tool]
    opening = json.loads(json.dumps(INITIALIZE))
    opening["params"]["capabilities"] = {"roots": {"listChanged": True}, "sampling": {}, "elicitation": {"form": {}}}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": f"c.{tool}", "arguments": {}}}
    async with raw_gateway(tmp_path, {"c": CONFORMANCE}) as pipe:
        await pipe.send(opening)
        assert (await pipe.receive())["id"] == 1
        await pipe.stdin.send(f"{json.dumps(initialized)}\n{json.dumps(call)}\n".encode())  # one write
        asked = await pipe.receive()
        assert asked.get("method") == method, asked
        await pipe.send({"jsonrpc": "2.0", "id": asked["id"], "result": answer})
        result = await pipe.receive()
    assert result["id"] == 2 and expected in result["result"]["content"][0]["text"], result


EVERYTHING = ROOT / ".node" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
EVERYTHING_ASKS = {
    "trigger-sampling-request": ({"prompt": "hi"}, ASKS["test_sampling"][1], "sampled!"),
    "trigger-elicitation-request": ({}, ASKS["test_elicitation"][1], "yes"),
}


EVERYTHING_SERVER = {"transport": "stdio", "command": "node", "args": [str(EVERYTHING), "stdio"]}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module-scoped: `modern` is


@pytest.fixture(scope="module")
async def modern(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Pipe]:
    """One gateway for the tests whose calls are 2026-era ones standing alone (each carries its own `_meta`; no
    handshake, no session state between them): a process each only repeated the gateway's and the servers'
    start-ups. Its limits let a 2 MB text through."""
    limits = {"max_inline_bytes": 10_000_000, "max_request_bytes": 10_000_000}
    servers = {"k": kitchen("k"), "e": EVERYTHING_SERVER}
    async with raw_gateway(tmp_path_factory.mktemp("modern"), servers, limits=limits) as pipe:
        yield pipe


@pytest.mark.parametrize("tool", sorted(EVERYTHING_ASKS))
async def test_a_2026_client_s_answered_round_without_progress_finishes_the_call_on_stdio(
    modern: Pipe, tool: str
) -> None:
    """The TypeScript 2.x client's frames: a call without a progress token (the lane's kind), answered with
    `inputResponses` and the `requestState` it got. The lane took the retry as a fresh call, dropping the answers:
    every retry was asked again, until the client gave up after 10 rounds."""
    arguments, answer, expected = EVERYTHING_ASKS[tool]
    capabilities: dict[str, Any] = {"sampling": {}, "elicitation": {"form": {}}}
    meta = {**MODERN, CLIENT_CAPABILITIES_META_KEY: capabilities}
    params: dict[str, Any] = {"name": f"e.{tool}", "arguments": arguments, "_meta": meta}
    await modern.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    asked = (await modern.receive())["result"]
    assert asked["resultType"] == "input_required", asked
    responses = dict.fromkeys(asked["inputRequests"], answer)
    retry = {**params, "inputResponses": responses, "requestState": asked["requestState"]}
    await modern.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": retry})
    done = (await modern.receive())["result"]
    assert done["resultType"] == "complete", done
    assert expected in json.dumps(done["content"])


async def test_the_typescript_2x_auto_client_probes_and_finishes_asking_calls_over_stdio(tmp_path: Path) -> None:
    """The real TypeScript 2.x client (`versionNegotiation: auto`, its own probe) over the gateway's stdio, calling
    server-everything's sampling and elicitation tools without a progress callback (the lane's kind of call)."""
    config = write_config(tmp_path, {"e": EVERYTHING_SERVER})
    steps = [
        {"tool": f"e.{tool}", "arguments": EVERYTHING_ASKS[tool][0], "progress": False} for tool in EVERYTHING_ASKS
    ]
    params = gateway_params(config)
    plan = {
        "package": str(CLIENTS / "node" / "node_modules" / "client-2"),
        "mode": "auto",
        "transport": "stdio",
        "command": params.command,
        "args": params.args,
        "cwd": params.cwd,
        "env": params.env,
        "person": WHO,
        "cases": [{"name": "asks", "steps": steps}],
    }
    given = tmp_path / "plan.json"
    given.write_text(json.dumps(plan), encoding="utf-8")
    with anyio.fail_after(120):
        done = await anyio.run_process([NODE, str(ROOT / "tests" / "clients" / "ts2.mjs"), str(given)], check=False)
    lines = [json.loads(line) for line in done.stdout.decode().splitlines() if line.startswith("{")]
    assert lines[0]["negotiated"] == "2026-07-28", done.stderr.decode()[-2000:]
    observed = lines[1]["steps"]
    assert [step.get("error") for step in observed] == [None, None], observed
    assert all(WHO in json.dumps(step["result"]["content"]) for step in observed)


@pytest.mark.parametrize("size", [100, 2_000_000])
async def test_a_plain_answer_of_any_size_arrives_whole_from_the_lane(modern: Pipe, size: int) -> None:
    # A plain answer counted small is encoded whole; one over `jsonwire.STREAM_FROM` is still written in slices.
    params = {"name": "k.echo", "arguments": {"text": "x" * size}, "_meta": MODERN}
    await modern.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
    with anyio.fail_after(30):
        while "id" not in (answer := json.loads(await modern.stdout.receive_until(b"\n", 5_000_000))):
            pass  # a notification the gateway pushed meanwhile (a list change)
    assert answer["id"] == 7
    assert answer["result"]["content"][0] == {"type": "text", "text": "x" * size}  # then, on a first call, the driver
    assert answer["result"]["resultType"] == "complete"
