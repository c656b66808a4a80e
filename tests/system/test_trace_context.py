"""W3C trace context in `_meta` through a `gateway serve --http` to a real downstream (the kitchen server, which
writes the `traceparent` and `tracestate` it receives to its events file), in both eras (a 2025-03-26-style
handshake session and a 2026 stateless client), with and without tracing configured; and the page shows each
call's trace id."""

import re
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import propagate
from opentelemetry.propagators.composite import CompositePropagator

from tests.fronts.test_page import get
from tests.harness import http_client, http_gateway, kitchen, write_config

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def untraced_client() -> Iterator[None]:
    """The client in this process sends the caller's trace context as the test wrote it. A tracer provider that
    another test installed in this process (OpenTelemetry's is global, set once: an in-process gateway with an
    exporter sets one) would make the SDK client start its own span and inject it over the test's `traceparent`."""
    kept = propagate.get_global_textmap()
    propagate.set_global_textmap(CompositePropagator([]))
    yield
    propagate.set_global_textmap(kept)


def received(events: Path) -> list[tuple[str, str]]:
    lines = events.read_text().splitlines() if events.exists() else []
    return [tuple(line.split(" ", 1)) for line in lines if line.startswith(("traceparent ", "tracestate "))]  # type: ignore[misc]


@pytest.mark.parametrize("tracing", ["none", "console"])
async def test_the_callers_trace_goes_on_to_the_downstream_in_both_eras_and_shows_on_the_page(
    tmp_path: Path, tracing: str
) -> None:
    events = tmp_path / "events.txt"
    config = write_config(tmp_path, {"k": kitchen("k", events=events)}, telemetry={"exporter": tracing})
    async with http_gateway(config) as base:
        for mode in ("legacy", "auto"):
            trace_id, parent = secrets.token_hex(16), secrets.token_hex(8)
            meta: Any = {"traceparent": f"00-{trace_id}-{parent}-01", "tracestate": "vendor=abc"}
            before = len(received(events))
            async with http_client(base, mode=mode) as client:
                result = await client.call_tool("k.echo", {"text": mode}, meta=meta)
            assert not result.is_error
            got = dict(received(events)[before:])
            version, their_trace, their_parent, flags = got["traceparent"].split("-")
            assert (version, their_trace, flags) == ("00", trace_id, "01"), mode  # the caller's trace
            if tracing == "none":
                assert their_parent == parent, mode  # not traced here: passed on as it came
            else:
                assert their_parent != parent, mode  # the gateway's own span in between
            assert got.get("tracestate") == "vendor=abc", mode
            calls = (await get(base, "/ui/calls", token=None)).text
            ref = re.findall(r'<tr data-call="([0-9a-f]+-\d+)"', calls)[0]
            assert f"<code>{trace_id[:8]}</code>" in calls, mode
            assert f"trace <code>{trace_id}</code>" in (await get(base, f"/ui/calls/{ref}", token=None)).text


async def test_a_first_call_on_the_sdks_path_passes_the_callers_trace_on_untraced(tmp_path: Path) -> None:
    """A progress token takes a call past the lanes, through the SDK: its trace context reaches the downstream even
    when no lane has seen one before (the downstream lane passes a context on once any request brought one)."""
    events = tmp_path / "events.txt"
    config = write_config(tmp_path, {"k": kitchen("k", events=events)}, telemetry={"exporter": "none"})
    trace_id, parent = secrets.token_hex(16), secrets.token_hex(8)
    meta: Any = {"traceparent": f"00-{trace_id}-{parent}-01"}

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        return None

    async with http_gateway(config) as base, http_client(base, mode="legacy") as client:
        result = await client.call_tool("k.echo", {"text": "sdk"}, meta=meta, progress_callback=progress)
    assert not result.is_error
    assert dict(received(events)).get("traceparent") == f"00-{trace_id}-{parent}-01"
