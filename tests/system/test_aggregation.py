"""Aggregation through a real gateway process: namespacing, limits on names, include/exclude, unknown names."""

from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.harness import gateway_params, kitchen, text_of, write_config

pytestmark = pytest.mark.anyio

LONG = "a_really_long_tool_name_that_goes_on_and_on_past_the_sixty_four_char_limit"


async def test_three_servers_are_aggregated_under_their_namespaces(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        {"alpha": kitchen("alpha"), "beta": kitchen("beta"), "gamma": kitchen("gamma", tools={"include": ["echo"]})},
    )
    async with Client(gateway_params(config), mode="legacy") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"alpha.echo", "beta.echo", "gamma.echo", "gateway.status"} <= names
        assert "alpha.blob" in names and "gamma.blob" not in names
        for server in ("alpha", "beta", "gamma"):
            result = await client.call_tool(f"{server}.echo", {"text": f"hi {server}"})
            assert text_of(result) == f"hi {server}"
        resources = {r.uri for r in (await client.list_resources()).resources}
        assert "beta+note://hello" in resources
        read = await client.read_resource("beta+note://hello")
        assert read.contents[0].text == "hello from beta"  # type: ignore[union-attr]
        prompt = await client.get_prompt("gamma.greet", {"name": "Ada"})
        assert "Hello, Ada!" in prompt.messages[0].content.text  # type: ignore[union-attr]


async def test_long_names_are_shortened_deterministically_and_never_collide(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        {"one": kitchen("one", "--extra-tool", LONG, "--extra-tool", LONG + "_x"), "one_two": kitchen("x")},
        namespace={"separator": "_", "max_name_length": 64},
    )
    async with Client(gateway_params(config), mode="legacy") as client:
        tools = (await client.list_tools()).tools
    names = [t.name for t in tools]
    assert len(names) == len(set(names))
    assert all(len(n) <= 64 for n in names)
    long_ones = [n for n in names if n.startswith("one_a_really")]
    assert len(long_ones) == 2 and all(len(n) == 64 for n in long_ones)
    # With "_" as separator, "one"+"two_echo"-style clashes are possible; none may remain.
    async with Client(gateway_params(config), mode="legacy") as client:
        again = [t.name for t in (await client.list_tools()).tools]
    assert again == names


async def test_exclude_wins_over_include(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"k": kitchen("k", tools={"include": ["e*", "b*"], "exclude": ["boom"]})})
    async with Client(gateway_params(config), mode="legacy") as client:
        names = {t.name for t in (await client.list_tools()).tools}
    assert {n for n in names if n.startswith("k.")} == {"k.echo", "k.blob"}


async def test_unknown_tool_is_an_error_result_naming_the_closest_tools(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"k": kitchen("k")})
    async with Client(gateway_params(config), mode="legacy") as client:
        result = await client.call_tool("k.ecko", {"text": "x"})
        assert result.is_error
        text = text_of(result)
        assert "'k.ecko'" in text and "k.echo" in text
        assert text_of(await client.call_tool("k.echo", {"text": "still fine"})) == "still fine"


async def test_a_tool_added_without_list_changed_is_listed_once_the_catalog_ttl_runs_out(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"k": kitchen("k")}, namespace={"catalog_ttl_s": 0.5})
    async with Client(gateway_params(config), mode="legacy") as client:
        assert "k.quiet_one" not in {t.name for t in (await client.list_tools()).tools}
        await client.call_tool("k.add_tool", {"name": "quiet_one", "quiet": True})
        with anyio.fail_after(10):
            listed = {t.name for t in (await client.list_tools()).tools}
            while "k.quiet_one" not in listed:  # the catalog expires by time: there is no event to wait on
                await anyio.sleep(0.1)
                listed = {t.name for t in (await client.list_tools()).tools}
        assert text_of(await client.call_tool("k.quiet_one", {"text": "found"})) == "found"
