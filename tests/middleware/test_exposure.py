"""Exposure through real gateway processes and real clients: modes, client rules, find/call, promotion, names."""

import json
import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp.types as types
import pytest
from mcp import Client
from mcp.client.session import IncomingMessage

from gateway.middleware.exposure.listed import definition_chars
from gateway.middleware.exposure.semantic import MODEL
from tests.harness import (
    ROOT,
    ended,
    free_port,
    gateway_command,
    gateway_params,
    hints_of,
    http_client,
    http_gateway,
    kitchen,
    text_of,
    wait_for,
    write_config,
)
from tests.system import test_think_e2e as test_e2e

pytestmark = pytest.mark.anyio

repo = test_e2e.repo
"""The throw-away git repository of the Think end-to-end tests (a fixture)."""
REVIEW = test_e2e.REVIEW

OWN = 16
"""gateway (status, read_output, find_tools, call_tool), think (11), prompt (say)."""
WAY_IN = {"gateway.find_tools", "gateway.call_tool", "think.plan", "think.next", "think.workflows.list"}
"""The own tools listed when not everything is (the shipped workflows exist, so workflows.list too)."""
STRICT = re.compile(r"[a-zA-Z0-9_-]{1,64}")
EXTRA = ["create_merge_request", "list_pipelines", "frobnicate_widgets"]


STEERING = {"hints": [{"tools": ["k.echo"], "on": "success", "text": "Next: steered."}]}
RULES = [{"client": "openai-*", "separator": "_", "mode": "search"}, {"client": "claude-code", "mode": "all"}]


def big(tmp_path: Path, n: int = 200, **sections: Any) -> Path:
    """A kitchen with `n` generated tools (plus its 10 and three named ones) behind the gateway."""
    extra = [arg for name in EXTRA for arg in ("--extra-tool", name)]
    return write_config(tmp_path, {"k": kitchen("k", "--tools", str(n), *extra)}, **sections)


@contextmanager
def gateway_over_http(config: Path) -> Iterator[str]:
    """`gateway serve --http` for a whole module (each test's clients are sessions of their own); yields its URL."""
    base = f"http://127.0.0.1:{free_port()}"
    argv, env = gateway_command(
        ["serve", "--config", str(config), "--http", base.removeprefix("http://"), "--log-level", "WARNING"], os.environ
    )
    process = subprocess.Popen(argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL)

    def up() -> bool:
        try:
            with httpx2.Client(timeout=1) as http:  # closed each time: no socket left for the GC to warn about
                return http.get(f"{base}/healthz").status_code == 200
        except httpx2.HTTPError:
            return process.poll() is not None

    try:
        anyio.run(wait_for, up, 60.0, "gateway /healthz")
        assert process.poll() is None, f"gateway exited with {process.returncode}"
        yield base
    finally:
        ended(process)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """229 tools in search mode (`auto` would fill the list), a steering rule on k.echo, the client rules of RULES."""
    exposure = {"mode": "search", "clients": RULES}
    with gateway_over_http(big(tmp_path_factory.mktemp("big"), steering=STEERING, exposure=exposure)) as url:
        yield url


def session(base: str, client: str = "test-client", **kw: Any) -> AbstractAsyncContextManager[Client]:
    return http_client(base, mode="legacy", client_info=types.Implementation(name=client, version="1"), **kw)


async def names_of(client: Client) -> set[str]:
    return {t.name for t in (await client.list_tools(cache_mode="bypass")).tools}


async def test_auto_lists_everything_within_budget_and_above_it_fills_the_budget_without_a_cliff(
    tmp_path: Path,
) -> None:
    rules = [{"client": "few", "max_tools": 30}, {"client": "tight", "max_list_chars": 5000}]
    config = big(tmp_path, n=5, exposure={"clients": rules, "pin": ["k.echo"]})
    async with http_gateway(config) as base:
        async with session(base) as client:
            everything = await names_of(client)
            assert len(everything) == OWN + 10 + 5 + 3  # 34 tools, within 40 and 32,000 chars
        async with session(base, "few") as client:
            listed = await names_of(client)  # 34 tools are over this client's 30: the way in, then all that fit
            assert listed == WAY_IN | {n for n in everything if n.startswith("k.")}  # 23: no own tool but the way in
        async with session(base, "tight") as client:  # under 40 tools but over 5,000 chars: filled up to them
            tools = (await client.list_tools(cache_mode="bypass")).tools
            assert sum(definition_chars(t) for t in tools) <= 5_000 and len(tools) > len(WAY_IN) + 1
            # What did not fit: the generated tools (~450 chars each); smaller ones after them were still taken.
            left_out = next(n for n in sorted(everything - {t.name for t in tools}) if n.startswith("k.tool_"))
            assert not (await client.call_tool(left_out, {"query": "x"})).is_error  # callable by name
            assert left_out in await names_of(client)  # and listed from then on


async def test_the_way_in_listed_in_search_mode_fits_in_3000_chars_at_full_descriptions(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"k": kitchen("k")}, exposure={"mode": "search"})
    async with Client(gateway_params(config), mode="legacy") as client:
        tools = (await client.list_tools()).tools
    assert {t.name for t in tools} == WAY_IN
    assert sum(definition_chars(t) for t in tools) <= 3_000  # issue 23: the gateway's own share of the window


async def test_mode_search_holds_on_a_small_catalog_descriptions_are_capped_and_policy_hides_from_search(
    tmp_path: Path,
) -> None:
    exposure = {"mode": "search", "description_chars": 60}
    policy = {"rules": [{"name": "no-measure", "deny": ["k.measure"]}]}
    small = write_config(tmp_path, {"k": kitchen("k")}, exposure=exposure, policy=policy)
    async with Client(gateway_params(small), mode="legacy") as client:
        tools = (await client.list_tools()).tools
        assert {t.name for t in tools} == WAY_IN and all(len(t.description or "") <= 60 for t in tools)
        assert sum(definition_chars(t) for t in tools) <= 3_000  # the gateway's own share of the window
        health = await client.call_tool("gateway.find_tools", {"query": "health of every server"})
        assert "gateway.status" in {t["name"] for t in health.structured_content["tools"]}
        assert not (await client.call_tool("gateway.status", {})).is_error  # hidden, callable by name
        plan = next(t for t in tools if t.name == "think.plan")
        assert "pattern" not in json.dumps(plan.input_schema)  # listed slim: the server checks it anyway
        found = await client.call_tool(
            "gateway.find_tools", {"query": "start a workflow run", "limit": 1, "detail": True}
        )
        top = found.structured_content["tools"][0]
        assert top["name"] == "think.plan" and len(top["description"]) > 60
        assert "pattern" in json.dumps(top["inputSchema"])  # the whole contract, one search away
        assert text_of(await client.call_tool("k.echo", {"text": "hidden"})) == "hidden"
        measure = await client.call_tool("gateway.find_tools", {"query": "report the length of the text"})
        assert "k.measure" not in {t["name"] for t in measure.structured_content["tools"]}
        denied = await client.call_tool("k.measure", {"text": "x"})
        assert denied.is_error and "'no-measure'" in text_of(denied)


async def test_without_workflows_the_way_in_leaves_out_the_workflow_list(tmp_path: Path) -> None:
    (tmp_path / "none").mkdir()
    think = {"workflows_dirs": [str(tmp_path / "none")]}
    config = write_config(tmp_path, {"k": kitchen("k")}, exposure={"mode": "search"}, think=think)
    async with Client(gateway_params(config), mode="legacy") as client:
        assert {t.name for t in (await client.list_tools()).tools} == WAY_IN - {"think.workflows.list"}
        assert not (await client.call_tool("think.workflows.list", {})).is_error  # still callable


async def test_a_hidden_tool_is_callable_by_name_with_the_usual_hints_and_joins_only_that_clients_list(
    shared: str,
) -> None:
    heard: dict[str, anyio.Event] = {"a": anyio.Event(), "b": anyio.Event()}

    def listener(who: str) -> Any:
        async def on_message(message: IncomingMessage) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                heard[who].set()

        return on_message

    other = session(shared, "another-client", message_handler=listener("b"))  # another client name: another client
    async with session(shared, "hidden-caller", message_handler=listener("a")) as a, other as b:
        assert "k.echo" not in await names_of(a)
        result = await a.call_tool("k.echo", {"text": "hidden but here"})
        assert text_of(result) == "hidden but here"
        hints = hints_of(result)
        assert hints[0].startswith("[gateway] Driver ") and "gateway.find_tools" in hints[0]
        assert "[gateway] Next: steered." in hints
        with anyio.fail_after(10):
            await heard["a"].wait()
        assert "k.echo" in await names_of(a)
        assert "k.echo" not in await names_of(b) and not heard["b"].is_set()
        async with session(shared, "hidden-caller") as again:  # the same client's next session lists it too
            assert "k.echo" in await names_of(again)


async def test_find_tools_ranks_the_whole_catalog_and_detail_is_enough_to_call(shared: str) -> None:
    async with session(shared) as client:
        found = await client.call_tool("gateway.find_tools", {"query": "open a merge request", "detail": True})
        body = found.structured_content
        assert body is not None and body["total"] >= 1
        top = body["tools"][0]
        assert top["name"] == "k.create_merge_request" and top["server"] == "k"
        assert top["inputSchema"]["properties"]["text"]["type"] == "string"
        assert set(top) == {"name", "gloss", "required", "server", "description", "inputSchema"}
        assert text_of(found).startswith(f"{len(body['tools'])} of {body['total']} for 'open a merge request'")
        assert "exact name" in text_of(found)
        assert "k.create_merge_request" in await names_of(client)  # promoted
        only = await client.call_tool("gateway.find_tools", {"query": "records query", "server": "k", "limit": 3})
        assert [t["name"][:2] for t in only.structured_content["tools"]] == ["k."] * 3
        listing = await client.call_tool("gateway.find_tools", {"server": "k"})  # browse: no query
        assert (
            listing.structured_content is not None and "k.create_merge_request" in listing.structured_content["tools"]
        )
        assert text_of(listing).startswith(f"{listing.structured_content['total']:,} tools on k")


async def test_status_says_which_rankers_answer_find_tools(shared: str) -> None:
    async with session(shared) as client:
        await client.call_tool("gateway.find_tools", {"query": "merge request"})
        search = (await client.call_tool("gateway.status", {})).structured_content["search"]
        assert search == {"rankers": ["lexical", "semantic"], "model": MODEL, "fusion": "scores", "problem": None}


async def test_call_tool_takes_the_same_path_as_a_direct_call(shared: str) -> None:
    async with session(shared) as client:
        direct = await client.call_tool("k.echo", {"text": "same"})
        wrapped = await client.call_tool("gateway.call_tool", {"name": "k.echo", "arguments": {"text": "same"}})
        assert text_of(wrapped) == text_of(direct) == "same"
        assert "[gateway] Next: steered." in hints_of(wrapped)
        spilled = await client.call_tool("gateway.call_tool", {"name": "k.blob", "arguments": {"n": 50_000}})
        assert any(isinstance(b, types.ResourceLink) for b in spilled.content)  # the size guard saw it
        assert any("gateway.read_output" in h for h in hints_of(spilled))


async def test_search_answers_stay_within_the_size_guard(shared: str) -> None:
    async with session(shared) as client:
        found = await client.call_tool(
            "gateway.find_tools", {"query": "records query limit verbose", "limit": 50, "detail": True}
        )
        body = found.structured_content
        assert body is not None and 0 < len(body["tools"]) < 50
        assert any("more left out" in n for n in body["notes"])
        size = sum(len(b.text.encode()) for b in found.content if isinstance(b, types.TextContent))
        assert size + len(json.dumps(body)) <= 20_000 + 2_048  # the answer, plus at most the hint budget
        assert not any(isinstance(b, types.ResourceLink) for b in found.content)  # never spilled


async def test_bad_input_gets_clear_answers_and_the_session_keeps_working(shared: str) -> None:
    async with session(shared) as client:

        async def find(**args: Any) -> types.CallToolResult:
            return await client.call_tool("gateway.find_tools", args)

        empty = await find(query="  ")
        assert empty.is_error and "non-empty `query`" in text_of(empty)
        huge = await find(query="x " * 5_120)
        assert huge.is_error and "10,240 characters; the limit is 1,000" in text_of(huge)
        zero = await find(query="merge request", limit=0)
        assert not zero.is_error and "limit 0 is outside 1-50; used 1." in text_of(zero)
        lots = await find(query="merge request", limit=10_000)
        assert "limit 10,000 is outside 1-50; used 50." in text_of(lots)
        server = await find(query="merge", server="nope")
        assert server.is_error and "Unknown server 'nope'; servers: " in text_of(server)
        nothing = await find(query="which of the zyzzyvas")
        assert not nothing.is_error and text_of(nothing).startswith("No tool matches")
        neither = await find(limit=3)
        assert neither.is_error and "needs a `query`" in text_of(neither) and "servers: " in text_of(neither)

        async def call(**args: Any) -> types.CallToolResult:
            return await client.call_tool("gateway.call_tool", args)

        missing = await call(name="k.echo")
        assert not missing.is_error and any("no `arguments`" in h for h in hints_of(missing))
        wrong = await call(name="k.echo", arguments=[1, 2])
        assert wrong.is_error and "`arguments` = [1, 2] (array): expected an object" in text_of(wrong)
        unknown = await call(name="k.frobnicate_widget", arguments={})
        assert unknown.is_error and "Closest known tools: k.frobnicate_widgets" in text_of(unknown)
        nameless = await call(arguments={})
        assert nameless.is_error and "`name` is required" in text_of(nameless)
        assert text_of(await client.call_tool("k.echo", {"text": "still here"})) == "still here"


async def test_a_client_rule_picks_mode_and_separator_and_every_name_and_text_follows(shared: str) -> None:
    async with session(shared, "openai-agents") as client:
        tools = (await client.list_tools()).tools
        assert len(tools) == len(WAY_IN) and all(STRICT.fullmatch(t.name) for t in tools)
        assert {"think_workflows_list", "gateway_find_tools", "think_plan"} <= {t.name for t in tools}
        plan = next(t for t in tools if t.name == "think_plan")
        assert "think_next" in (plan.description or "") and "think.next" not in (plan.description or "")
        found = await client.call_tool("gateway_find_tools", {"query": "frobnicate widgets", "limit": 1})
        assert found.structured_content["tools"][0]["name"] == "k_frobnicate_widgets"
        assert any("gateway_call_tool" in h for h in hints_of(found))
        blob = await client.call_tool("k_blob", {"n": 50_000})
        assert any("gateway_read_output" in h for h in hints_of(blob))
        assert not any("gateway.read_output" in h for h in hints_of(blob))
    async with session(shared, "claude-code") as client:
        assert len(await names_of(client)) >= OWN + 213


async def test_the_index_follows_a_downstreams_list_changed(shared: str) -> None:
    async with session(shared) as client:

        def top(found: types.CallToolResult) -> str | None:
            return next((t["name"] for t in found.structured_content["tools"]), None)

        before = await client.call_tool("gateway.find_tools", {"query": "quokka"})
        assert top(before) != "k.feed_the_quokka"
        await client.call_tool("k.add_tool", {"name": "feed_the_quokka"})
        with anyio.fail_after(10):
            while True:  # the listing is refreshed when the downstream's notification arrives; no event reaches us
                found = await client.call_tool("gateway.find_tools", {"query": "quokka"})
                if top(found) == "k.feed_the_quokka":
                    break
                await anyio.sleep(0.05)


async def test_the_think_review_workflow_completes_in_search_mode_under_underscore_names(
    tmp_path: Path, repo: Path
) -> None:
    git = {
        "transport": "stdio",
        "command": str(ROOT / ".venv" / "bin" / "mcp-server-git"),
        "args": ["--repository", str(repo)],
    }
    config = write_config(
        tmp_path,
        {"git": git},
        think={"state_dir": str(tmp_path / "state")},
        namespace={"separator": "_"},
        exposure={"mode": "search"},
    )
    async with Client(gateway_params(config), mode="legacy") as client:
        assert client.instructions is not None and "think_plan" in client.instructions
        assert "think.plan" not in client.instructions and "<server>_<tool>" in client.instructions
        listed = await names_of(client)
        assert all(STRICT.fullmatch(n) for n in listed) and not any(n.startswith("git_") for n in listed)
        plan = await client.call_tool("think_plan", {"workflow": "review_local_v1", "params": {"repo_path": str(repo)}})
        ins = plan.structured_content
        taken: list[str] = []
        with anyio.fail_after(60):
            while ins is not None and not ins["done"]:
                taken.append(ins["step_id"])
                assert STRICT.fullmatch(ins["call"]) and "think_next" in ins["next"], ins
                args = {"workflow": ins["workflow"], "run_id": ins["run_id"], "step_id": ins["step_id"]}
                result = await client.call_tool(ins["call"], ins["input"])  # git_* are hidden: called by exact name
                assert not result.is_error, text_of(result)
                if ins["call"] == "prompt_say":
                    args["result_snapshot"] = REVIEW if ins["step_id"] == "review" else result.structured_content
                else:
                    recorded = f"[gateway] Step `{ins['step_id']}` of run {ins['run_id']} recorded by the gateway."
                    assert any(h.startswith(recorded) and "Next: think_next" in h for h in hints_of(result))
                ins = (await client.call_tool("think_next", args)).structured_content
    assert ins is not None and ins["done"] is True, ins
    assert taken == ["__driver_bootstrap", "__driver_announce", "status", "branches", "log", "diff", "review", "report"]


async def test_a_2026_stdio_client_hears_of_its_promotion_through_listen(tmp_path: Path) -> None:
    config = big(tmp_path, n=40)
    async with Client(gateway_params(config)) as client:
        assert client.protocol_version == "2026-07-28"
        assert "k.frobnicate_widgets" not in await names_of(client)
        async with client.listen(tools_list_changed=True) as subscription:
            await client.call_tool("gateway.find_tools", {"query": "frobnicate widgets", "limit": 1})
            with anyio.fail_after(10):
                event = await anext(aiter(subscription))
        assert type(event).__name__ == "ToolsListChanged"
        assert "k.frobnicate_widgets" in await names_of(client)
