"""Policy means all of a server, and the gateway's own tools when a rule names them, on a real HTTP gateway with
real downstreams: `t` (the conformance fixture: tools, resources, templates, prompts, completion, subscriptions)
and `u` (the kitchen, with a tool whose name is too long to expose whole).

Each identity's rules: carl (contractors) may use `u.*` only; dana may not use find_tools nor call_tool; erin has
no rule of her own. Everyone is under `no-deletes`. Clients named `openai-*` see names with `_`."""

import os
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client, MCPError

from gateway.routing.names import assign
from tests.harness import PYTHON, ROOT, http_client, http_gateway, kitchen, text_of, write_config

CARL, DANA, ERIN = "carl-token-0123456789", "dana-token-0123456789", "erin-token-0123456789"
LONG = "purge_" + "x" * 70 + "_delete_everything"
SHORT = assign([("u", LONG)], ".", 64)["u", LONG]
"""The exposed name of u's LONG tool: its first characters and a hash."""
CONFORMANCE = {
    "transport": "stdio",
    "command": PYTHON,
    "args": ["-m", "tests.servers.conformance"],
    "env": {"PYTHONPATH": str(ROOT)},
    "cwd": str(ROOT),
}
RULES = [
    {"name": "no-deletes", "deny": ["*.*delete*"]},
    {"name": "contractors", "groups": ["contractors"], "allow": ["u.*"]},
    {"name": "no-way-in", "identities": ["dana"], "deny": ["gateway.find_tools", "gateway.call_tool"]},
]
SUBSCRIBE = types.SubscribeRequest(params=types.SubscribeRequestParams(uri="t+test://watched-resource"))

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tokens = [
        {"name": "carl", "token": CARL, "groups": ["contractors"]},
        {"name": "dana", "token": DANA},
        {"name": "erin", "token": ERIN},
    ]
    return write_config(
        tmp_path_factory.mktemp("policy"),
        {"t": CONFORMANCE, "u": kitchen("u", "--extra-tool", LONG)},
        auth={"tokens": tokens},
        policy={"rules": RULES},
        exposure={"mode": "all", "clients": [{"client": "openai-*", "separator": "_"}]},
    )


@pytest.fixture(scope="module")
async def gateway(config: Path) -> AsyncIterator[str]:
    async with http_gateway(config) as base:
        yield base


def client(base: str, token: str, mode: str = "legacy", name: str = "test-client") -> Any:
    info = types.Implementation(name=name, version="1")
    return http_client(base, mode=mode, headers={"authorization": f"Bearer {token}"}, client_info=info)


async def refusal(request: Awaitable[Any]) -> str:
    """The error message `request` is answered with (not `pytest.raises`: its failure is a BaseException, which
    would stop the module's event loop from inside the client's task group)."""
    try:
        with anyio.fail_after(30):
            answer = await request
    except MCPError as exc:
        return exc.error.message
    raise AssertionError(f"answered, not refused: {answer!r}")


async def tool_names(session: Client) -> set[str]:
    return {t.name for t in (await session.list_tools()).tools}


async def test_a_contractor_allowed_one_server_lists_reads_gets_completes_and_watches_nothing_of_another(
    gateway: str,
) -> None:
    async with client(gateway, CARL) as carl:
        resources = {r.uri for r in (await carl.list_resources()).resources}
        templates = {t.uri_template for t in (await carl.list_resource_templates()).resource_templates}
        prompts = {p.name for p in (await carl.list_prompts()).prompts}
        refused = {
            "read": await refusal(carl.read_resource("t+test://static-text")),
            "read from a template": await refusal(carl.read_resource("t+test://template/7/data")),
            "get": await refusal(carl.get_prompt("t.test_simple_prompt")),
            "complete a prompt": await refusal(
                carl.complete(
                    types.PromptReference(name="t.test_prompt_with_arguments"), {"name": "arg1", "value": "a"}
                )
            ),
            "complete a template": await refusal(
                carl.complete(
                    types.ResourceTemplateReference(uri="t+test://template/{id}/data"), {"name": "id", "value": "7"}
                )
            ),
            "subscribe": await refusal(carl.session.send_request(SUBSCRIBE, types.EmptyResult)),
        }
        note = await carl.read_resource("u+note://hello")  # the server it may use answers as before
        greeting = await carl.get_prompt("u.greet", {"name": "carl"})
    async with client(gateway, CARL, mode="auto") as carl_2026:
        refused["listen"] = await refusal(
            carl_2026.listen(resource_subscriptions=["t+test://watched-resource"]).__aenter__()
        )
    async with client(gateway, ERIN) as erin:  # the same requests of an identity the rule does not name
        erin_reads = await erin.read_resource("t+test://static-text")
        erin_prompts = {p.name for p in (await erin.list_prompts()).prompts}

    assert "u+note://hello" in resources and not [uri for uri in resources if uri.startswith("t+")]
    assert not [uri for uri in templates if uri.startswith("t+")]
    assert "u.greet" in prompts and not [name for name in prompts if name.startswith("t.")]
    for what, message in refused.items():
        assert "is not available to carl: it matches no allow list (policy rule 'contractors')" in message, what
    assert refused["read"].startswith("Resource 't+test://static-text' is not available")
    assert refused["complete a template"].startswith("Resource template 't+test://template/{id}/data'")
    assert refused["get"].startswith("Prompt 't.test_simple_prompt'")
    assert note.contents and greeting.messages
    assert erin_reads.contents and "t.test_simple_prompt" in erin_prompts


async def test_a_deny_naming_find_tools_or_call_tool_stops_them_as_well_as_hiding_them(gateway: str) -> None:
    async with client(gateway, DANA) as dana:
        listed = await tool_names(dana)
        find = await dana.call_tool("gateway.find_tools", {"query": "echo the text"})
        call = await dana.call_tool("gateway.call_tool", {"name": "u.echo", "arguments": {"text": "via"}})
        bad_call = await dana.call_tool("gateway.call_tool", {"arguments": "not even valid"})
        direct = await dana.call_tool("u.echo", {"text": "direct"})
    assert not {"gateway.find_tools", "gateway.call_tool"} & listed and "gateway.status" in listed
    assert find.is_error and "Tool 'gateway.find_tools' is not available to dana: denied by 'gateway.find_tools'" in (
        text_of(find)
    )
    assert find.structured_content is None  # no search ran
    for refused in (call, bad_call):
        assert refused.is_error and "Tool 'gateway.call_tool' is not available to dana" in text_of(refused)
        assert "(policy rule 'no-way-in')" in text_of(refused)
    assert text_of(direct) == "direct"


async def test_call_tool_and_find_tools_see_only_what_the_caller_may(gateway: str) -> None:
    async with client(gateway, CARL) as carl:
        through = await carl.call_tool("gateway.call_tool", {"name": "t.test_simple_text"})
        allowed = await carl.call_tool("gateway.call_tool", {"name": "u.echo", "arguments": {"text": "via"}})
        found = await carl.call_tool("gateway.find_tools", {"query": "tests simple text content response", "limit": 50})
        other_server = await carl.call_tool("gateway.find_tools", {"query": "simple text", "server": "t"})
        no_server = await carl.call_tool("gateway.find_tools", {"query": "simple text", "server": "nope"})
        unknown_tool = await carl.call_tool("test_simple_text", {})
        unknown_prompt = await refusal(carl.get_prompt("test_simple_prompt"))
        unknown_resource = await refusal(carl.read_resource("test://static-text"))
    async with client(gateway, ERIN) as erin:  # someone who may see t is shown its names
        erin_unknown_prompt = await refusal(erin.get_prompt("test_simple_prompt"))
        erin_found = await erin.call_tool("gateway.find_tools", {"query": "tests simple text content response"})

    assert through.is_error and "Tool 't.test_simple_text' is not available to carl" in text_of(through)
    assert text_of(allowed) == "via"
    assert found.structured_content is not None and erin_found.structured_content is not None
    assert not [hit for hit in found.structured_content["tools"] if hit["name"].startswith("t.")]
    assert erin_found.structured_content["tools"][0]["name"] == "t.test_simple_text"
    for unknown in (other_server, no_server):  # t is no server carl can use: not named, not told it exists
        assert unknown.is_error and "servers: gateway, prompt, think, u. Omit `server`" in text_of(unknown)
    assert "Unknown server 't'" in text_of(other_server)
    assert "t.test" not in text_of(unknown_tool) and "Unknown tool 'test_simple_text'" in text_of(unknown_tool)
    assert unknown_prompt == "Unknown prompt 'test_simple_prompt'. List prompts again to see what is available."
    assert "t+test://static-text" not in unknown_resource and "Unknown resource" in unknown_resource
    assert "Closest known prompts: t.test_simple_prompt" in erin_unknown_prompt


async def test_a_deny_glob_sees_the_full_name_of_a_tool_whose_exposed_name_was_shortened(gateway: str) -> None:
    async with client(gateway, ERIN) as erin:
        listed = await tool_names(erin)
        direct = await erin.call_tool(SHORT, {"text": "x"})
        by_full_name = await erin.call_tool(f"u.{LONG}", {"text": "x"})
        through = await erin.call_tool("gateway.call_tool", {"name": SHORT, "arguments": {"text": "x"}})
        found = await erin.call_tool("gateway.find_tools", {"query": "purge delete everything", "limit": 50})
    assert len(SHORT) == 64 and "delete" not in SHORT
    assert "u.echo" in listed and not [name for name in listed if name.startswith("u.purge")]
    for refused in (direct, by_full_name, through):
        said = text_of(refused)
        assert refused.is_error and f"Tool {SHORT!r} is not available to erin: denied by '*.*delete*'" in said
        assert f"(matched on server 'u''s name {LONG!r}) (policy rule 'no-deletes')" in said
    assert found.structured_content is not None
    assert not [hit for hit in found.structured_content["tools"] if "purge" in hit["name"]]


async def test_a_client_rule_with_separator_underscore_under_an_allow_list_lists_what_the_rules_allow(
    gateway: str,
) -> None:
    async with client(gateway, CARL, name="openai-agents") as carl:
        listed = await tool_names(carl)
        echo = await carl.call_tool("u_echo", {"text": "underscored"})
        denied = await carl.call_tool("t_test_simple_text", {})
        found = await carl.call_tool("gateway_find_tools", {"query": "echo the text back"})
    async with client(gateway, CARL) as carl_dotted:
        dotted = await tool_names(carl_dotted)
    assert {"u_echo", "gateway_find_tools", "gateway_call_tool", "think_plan", "prompt_say"} <= listed
    assert not [name for name in listed if name.startswith("t_")]
    assert {name.replace(".", "_") for name in dotted} == listed  # the same tools, only named otherwise
    assert text_of(echo) == "underscored"
    assert denied.is_error and "Tool 't_test_simple_text' is not available to carl" in text_of(denied)
    assert found.structured_content is not None and found.structured_content["tools"][0]["name"] == "u_echo"


async def test_check_as_names_each_prompt_resource_and_template_a_rule_hides(config: Path) -> None:
    argv = [PYTHON, "-m", "gateway", "check", "--config", str(config), "--as", "carl"]
    with anyio.fail_after(60):
        done = await anyio.run_process(argv, cwd=str(ROOT), env={**os.environ, "PYTHONPATH": str(ROOT)})
    lines = done.stdout.decode().splitlines()
    why = "it matches no allow list (policy rule 'contractors')"
    assert f"  t.test_simple_prompt (prompt): {why}" in lines
    assert f"  t+test://static-text (resource): {why}" in lines
    assert f"  t+test://template/{{id}}/data (resource template): {why}" in lines
    assert f"  t.test_simple_text: {why}" in lines and "  u.echo" in lines
    assert not [line for line in lines if "u+note://hello" in line or "u.greet" in line]  # what carl may use
