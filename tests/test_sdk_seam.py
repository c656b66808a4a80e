"""The SDK's private names the gateway relies on, pinned: an SDK upgrade that moves or changes one fails here."""

import inspect
from importlib.metadata import version

import pytest
from mcp import Client
from mcp.server import Server
from mcp_types import CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY

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


async def test_the_handshake_stamp_leaves_the_params_alone() -> None:
    async with Client(Server("seam"), mode="legacy") as client:
        params = sdk.stamp_envelope(client.session, {"method": "tools/call", "params": {"name": "x"}})
    assert params == {"name": "x"}
