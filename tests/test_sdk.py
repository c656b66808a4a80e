"""The SDK's private names the gateway relies on, pinned: an SDK upgrade that moves or changes one fails here."""

import copy
import inspect
import math
from importlib.metadata import version
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.server import Server
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, LOG_LEVEL_META_KEY, PROTOCOL_VERSION_META_KEY

from gateway import sdk

pytestmark = pytest.mark.anyio


def test_the_installed_sdk_is_the_release_the_seam_was_read_in() -> None:
    # pyproject allows mcp>=2.3,<2.4; a release outside that needs gateway/sdk.py read again.
    assert version("mcp").startswith("2.3.")


def test_every_reexported_private_name_still_exists() -> None:
    missing = [name for name in sdk.__all__ if getattr(sdk, name, None) is None]
    assert missing == []


def test_the_http_client_factory_takes_the_arguments_the_adapters_pass() -> None:
    assert {"headers", "timeout"} <= set(inspect.signature(sdk.create_mcp_http_client).parameters)


async def test_the_modern_stamp_adds_the_era_envelope_to_the_params_in_place() -> None:
    async with Client(Server("seam"), mode="2026-07-28") as client:
        message = {"method": "tools/call", "params": {"name": "x"}}
        params = sdk.stamp_envelope(client.session, message)
    assert params is message["params"]
    assert params["_meta"][PROTOCOL_VERSION_META_KEY] == "2026-07-28"
    assert CLIENT_INFO_META_KEY in params["_meta"]


async def test_a_modern_request_declares_the_offered_capabilities_in_place_of_the_sessions() -> None:
    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    async with Client(Server("seam"), mode="2026-07-28", elicitation_callback=elicit) as client:
        sdk.offer_per_request(client.session)
        message = {"method": "tools/call", "params": {"name": "x", "_meta": {sdk.OFFER_META_KEY: {"roots": {}}}}}
        meta = sdk.stamp_envelope(client.session, message)["_meta"]
        own = sdk.stamp_envelope(client.session, {"method": "tools/call", "params": {"name": "x"}})
    narrowed = meta[CLIENT_CAPABILITIES_META_KEY]
    assert "elicitation" not in narrowed and narrowed["roots"] == {}
    assert sdk.OFFER_META_KEY not in meta  # the offer travels with the request, not on the wire
    assert "elicitation" in own["_meta"][CLIENT_CAPABILITIES_META_KEY]


PIPED: list[dict[str, Any]] = [
    {"name": "x"},
    {"name": "x", "arguments": {"a": 1}, "_meta": {sdk.OFFER_META_KEY: {"roots": {}}}},
    {"name": "x", "_meta": {sdk.OFFER_META_KEY: {}, LOG_LEVEL_META_KEY: "debug", "k": 1}},
    {"name": "x", "_meta": {PROTOCOL_VERSION_META_KEY: "1999-01-01", "k": 1}},
    # The same offer again, then another: each call narrowed to its own offer (the pipe stamp keeps the last one).
    {"name": "x", "_meta": {sdk.OFFER_META_KEY: {"roots": {}}}},
    {"name": "y", "_meta": {sdk.OFFER_META_KEY: {"roots": {}}}},
    {"name": "y", "_meta": {sdk.OFFER_META_KEY: {"elicitation": {}}}},
    {"name": "y", "_meta": {sdk.OFFER_META_KEY: {"roots": {}}}},
]


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
async def test_the_pipe_stamp_writes_the_envelope_the_sessions_stamp_writes(mode: str) -> None:
    # Before: the lane stamped each call with the SDK's stamp, which also works out HTTP headers a pipe never carries.
    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    async with Client(Server("seam"), mode=mode, elicitation_callback=elicit, log_level="info") as client:
        sdk.offer_per_request(client.session)  # as every downstream connection has it
        piped = sdk.PipeStamp(client.session)
        for params in PIPED:
            expected = sdk.stamp_envelope(client.session, {"method": "tools/call", "params": copy.deepcopy(params)})
            got = copy.deepcopy(params)
            piped(got)
            assert got == expected


async def test_the_handshake_stamp_leaves_the_params_alone() -> None:
    async with Client(Server("seam"), mode="legacy") as client:
        params = sdk.stamp_envelope(client.session, {"method": "tools/call", "params": {"name": "x"}})
    assert params == {"name": "x"}


async def test_a_session_held_by_the_http_lane_does_not_expire_meanwhile() -> None:
    transport = StreamableHTTPServerTransport(mcp_session_id="held", idle_timeout=60)
    async with transport.connect():
        idle = transport.idle_scope
        assert idle is not None
        with sdk.http_session_in_flight(transport):
            assert idle.deadline == math.inf
        assert idle.deadline > anyio.current_time() + 59


def test_the_session_manager_keeps_sessions_and_owners_where_the_lane_looks() -> None:
    manager = StreamableHTTPSessionManager(Server("seam"))
    assert sdk.http_session(manager, "unknown", None) is None
    assert manager._server_instances == {} and manager._session_owners == {}


async def test_a_handlers_session_leads_to_its_connection() -> None:
    seen = anyio.Event()
    connections: list[object] = []

    async def initialized(ctx: Any, params: object) -> None:
        connections.append(sdk.connection_of(ctx.session))
        seen.set()

    server = Server("seam")
    server.add_notification_handler("notifications/initialized", types.NotificationParams, initialized)
    async with Client(server, mode="legacy"):
        with anyio.fail_after(5):
            await seen.wait()
    assert isinstance(connections[0], sdk.Connection)


async def test_an_unvalidated_request_returns_the_result_as_sent() -> None:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="t", input_schema={"type": "object"})])

    async with Client(Server("seam", on_list_tools=list_tools), mode="legacy") as client:
        raw = await sdk.send_unvalidated(client.session, types.ListToolsRequest(), timeout_s=5)
    assert raw["tools"][0]["name"] == "t" and raw["tools"][0]["inputSchema"] == {"type": "object"}


def test_the_one_sdk_method_the_gateway_patches_is_still_there_as_the_patch_reads_it() -> None:
    # The process-wide patch (`sdk.unanswered_cancels`) replaces exactly the methods `sdk.PATCHED` names; each must
    # still exist, take what the patch passes, and the transport keep what the patch reads.
    assert [(cls.__name__, name) for cls, name in sdk.PATCHED] == [
        ("StreamableHTTPServerTransport", "_terminate_unanswered_request")
    ]
    sdk.unanswered_cancels()
    sdk.unanswered_cancels()  # idempotent: the SDK's method stays the one wrapped
    patched = StreamableHTTPServerTransport._terminate_unanswered_request
    assert getattr(patched, "gateway_unanswered", False)
    original = inspect.getclosurevars(patched).nonlocals["original"]
    assert not getattr(original, "gateway_unanswered", False)
    assert list(inspect.signature(original).parameters) == ["self", "request_id"]
    assert callable(StreamableHTTPServerTransport.close_sse_stream)
    transport = StreamableHTTPServerTransport(mcp_session_id=None)
    assert transport.is_json_response_enabled is False and transport._event_store is None
