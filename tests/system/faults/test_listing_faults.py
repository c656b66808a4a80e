"""Listings from a misbehaving downstream: one bad tool is repaired or left out alone, and status says which and why."""

from pathlib import Path

import pytest

from tests.harness import text_of
from tests.system.faults.wire import call, gateway, status

pytestmark = pytest.mark.anyio


# -- listings: one bad tool hides nothing else ------------------------------------------------------


async def test_a_tool_with_a_bad_or_missing_input_schema_is_repaired_alone_and_status_says_why(
    tmp_path: Path,
) -> None:
    async with gateway(tmp_path, "--bad-tools") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"f.echo", "f.pid", "f.string_schema", "f.no_schema"} <= names
        assert text_of(await call(client, "echo", {"text": "listed"})) == "listed"
        servers = await status(client)
    problems = servers["f"]["problems"]
    assert any("string_schema" in p and "inputSchema" in p for p in problems)
    assert any("no_schema" in p and "no inputSchema" in p for p in problems)
    assert any("a tool entry: left out, name" in p for p in problems)
    assert servers["f"]["tools"] == sum(1 for n in names if n.startswith("f."))
