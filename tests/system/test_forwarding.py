"""Forwarding through a real stdio gateway: progress, cancellation, list_changed, 10 MB payloads, downstream errors."""

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import mcp.types as types
import pytest
from mcp import Client
from mcp.client.session import IncomingMessage

from tests.harness import gateway_params, kitchen, text_of, wait_for, write_config

pytestmark = pytest.mark.anyio

TEN_MB = 10_000_000
# The size guard would spill a 10 MB result; these tests prove the transport path carries it whole.
PASS_THROUGH = {"max_inline_bytes": 64 * 1024 * 1024, "max_request_bytes": 64 * 1024 * 1024}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module-scoped: `plain` and `passing` are


@pytest.fixture(scope="module")
async def plain(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Client]:
    """A legacy client of one stdio gateway with the kitchen server, for the tests that only make calls."""
    config = write_config(tmp_path_factory.mktemp("plain"), {"k": kitchen("k")})
    async with Client(gateway_params(config), mode="legacy") as client:
        yield client


@pytest.fixture(scope="module")
async def passing(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Client]:
    """`plain` with the size guard out of the way (`PASS_THROUGH`), for the tests that send big payloads."""
    config = write_config(tmp_path_factory.mktemp("passing"), {"k": kitchen("k")}, limits=PASS_THROUGH)
    async with Client(gateway_params(config), mode="legacy", read_timeout_seconds=120) as client:
        yield client


async def test_progress_from_a_downstream_reaches_the_stdio_client(plain: Client) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    result = await plain.call_tool("k.slow", {"steps": 3, "delay_s": 0.01}, progress_callback=on_progress)
    assert text_of(result) == "slow done"
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_client_cancellation_reaches_the_downstream_and_the_session_keeps_working(tmp_path: Path) -> None:
    events = tmp_path / "events.log"
    config = write_config(tmp_path, {"k": kitchen("k", events=events)})
    async with Client(gateway_params(config), mode="legacy") as client:
        with anyio.move_on_after(0.5) as scope:
            await client.call_tool("k.slow", {"steps": 100, "delay_s": 0.1})
        assert scope.cancelled_caught
        await wait_for(lambda: "cancelled slow" in events.read_text(), within_s=10, what="downstream cancelled")
        assert text_of(await client.call_tool("k.echo", {"text": "after"})) == "after"


async def test_tools_list_changed_reaches_a_legacy_stdio_client_and_the_new_tool_is_listed(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"k": kitchen("k")})
    changed = [anyio.Event()]  # the last one is armed; earlier ones may have caught notifications from startup

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed[-1].set()

    async with Client(gateway_params(config), mode="legacy", message_handler=on_message) as client:
        assert "k.fresh" not in {t.name for t in (await client.list_tools()).tools}
        changed.append(anyio.Event())
        await client.call_tool("k.add_tool", {"name": "fresh"})
        with anyio.fail_after(10):
            await changed[-1].wait()
        names = {t.name for t in (await client.list_tools(cache_mode="bypass")).tools}
        assert "k.fresh" in names
        assert text_of(await client.call_tool("k.fresh", {"text": "new"})) == "new"


async def test_tools_list_changed_reaches_a_2026_stdio_client_through_listen(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"k": kitchen("k")})
    async with Client(gateway_params(config)) as client:
        assert client.protocol_version == "2026-07-28"
        async with client.listen(tools_list_changed=True) as subscription:
            await client.call_tool("k.add_tool", {"name": "fresh"})
            with anyio.fail_after(10):
                event = await anext(aiter(subscription))
        assert type(event).__name__ == "ToolsListChanged"
        assert "k.fresh" in {t.name for t in (await client.list_tools(cache_mode="bypass")).tools}


async def test_10mb_result_and_10mb_request_pass_stdio_front_to_stdio_downstream_intact(passing: Client) -> None:
    blob = await passing.call_tool("k.blob", {"n": TEN_MB})
    assert not blob.is_error
    payload = blob.content[0]
    assert isinstance(payload, types.TextContent) and payload.text == "x" * TEN_MB
    measured = await passing.call_tool("k.measure", {"text": "y" * TEN_MB})
    assert measured.content[0] == types.TextContent(text=f"received {TEN_MB} chars")
    assert text_of(await passing.call_tool("k.echo", {"text": "next"})) == "next"


async def test_a_downstream_handler_exception_is_an_error_result_naming_the_server(plain: Client) -> None:
    result = await plain.call_tool("k.boom", {})
    assert result.is_error
    assert "'k'" in text_of(result)
    assert text_of(await plain.call_tool("k.echo", {"text": "fine"})) == "fine"


async def test_a_big_non_ascii_result_is_streamed_out_intact(passing: Client) -> None:
    """Results over 1 MiB leave the stdio front piece by piece; escaping must keep every character."""
    blob = await passing.call_tool("k.blob", {"n": 1_500_000, "char": 'é€😀\ud7ff"\\\n'})
    assert text_of(blob) == ('é€😀\ud7ff"\\\n' * 1_500_000)[:1_500_000]
    assert text_of(await passing.call_tool("k.echo", {"text": "after"})) == "after"
