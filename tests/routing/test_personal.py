"""A per-user server's resources, templates and prompts are each identity's own (DESIGN §16): listed from the
caller's own process, never from whichever user's process is up, and another identity's names are "not found"
(`routing/personal.py`). Through a real HTTP gateway and a real per-user stdio server (`tests/servers/personal.py`)."""

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
import mcp.types as types
import pytest
from mcp import MCPError
from mcp.server.subscriptions import PromptsListChanged, ResourcesListChanged

from tests.harness import PYTHON, ROOT, http_client, http_gateway, write_config
from tests.system.faults.wire import faulty

TOKENS = {"ann": "ann-token-0123456789", "bob": "bob-token-0123456789"}
PERSONAL: dict[str, Any] = {
    "transport": "stdio",
    "command": PYTHON,
    "args": ["-m", "tests.servers.personal"],
    "env": {"PYTHONPATH": str(ROOT), "OWNER": "${user:OWNER}"},
    "cwd": str(ROOT),
    "protocol": "legacy",
}

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    config = write_config(
        tmp_path_factory.mktemp("personal"),
        {"p": PERSONAL, "f": faulty("--bad-resources", env={"OWNER": "${user:OWNER}"})},
        auth={"tokens": [{"name": n, "token": t} for n, t in TOKENS.items()]},
        secrets={"sources": ["header"]},
    )
    async with http_gateway(config) as base:
        yield base


def as_user(name: str) -> dict[str, str]:
    return {"authorization": f"Bearer {TOKENS[name]}", "x-gateway-secret-owner": name}


async def listed(base: str, name: str) -> dict[str, list[str]]:
    """Everything of server `p` that `name` is listed: resource URIs, names and descriptions, templates, prompts."""
    async with http_client(base, mode="legacy", headers=as_user(name)) as client:
        resources = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        prompts = (await client.list_prompts()).prompts
    return {
        "resources": sorted(f"{r.uri} | {r.name} | {r.description}" for r in resources if r.uri.startswith("p+")),
        "templates": sorted(f"{t.uri_template} | {t.name}" for t in templates if t.uri_template.startswith("p+")),
        "prompts": sorted(f"{p.name} | {p.description}" for p in prompts if p.name.startswith("p.")),
    }


def own(name: str) -> dict[str, list[str]]:
    return {
        "resources": [f"p+note://{name}/diary | p.{name} note://{name}/diary | {name}'s private note"],
        "templates": [f"p+repo://{name}/{{name}} | p.{name}-repositories"],
        "prompts": [f"p.{name}_week | Summarise {name}'s week"],
    }


async def test_each_identity_is_listed_its_own_processes_resources_templates_and_prompts(gateway: str) -> None:
    with anyio.fail_after(60):
        ann = await listed(gateway, "ann")  # ann's process is up first: on its own, it listed for everyone
        bob = await listed(gateway, "bob")
        ann_again = await listed(gateway, "ann")
    assert ann == own("ann") and ann_again == own("ann")
    assert bob == own("bob")


async def test_another_identitys_prompt_is_not_found_and_its_resources_are_read_by_the_callers_own_process(
    gateway: str,
) -> None:
    def refusal(exc: pytest.ExceptionInfo[MCPError]) -> tuple[int, str]:
        return exc.value.error.code, exc.value.error.message

    with anyio.fail_after(60):
        async with http_client(gateway, mode="legacy", headers=as_user("ann")) as ann:
            await ann.list_prompts()
            anns_prompt = await ann.get_prompt("p.ann_week")
            anns_note = await ann.read_resource("p+note://ann/diary")
            anns_completion = await ann.complete(
                types.PromptReference(name="p.ann_week"), {"name": "topic", "value": "x"}
            )
        async with http_client(gateway, mode="legacy", headers=as_user("bob")) as bob:
            await bob.list_prompts()
            with pytest.raises(MCPError) as unknown:
                await bob.get_prompt("p.nobodys_week")
            with pytest.raises(MCPError) as anns:
                await bob.get_prompt("p.ann_week")
            with pytest.raises(MCPError) as completion:
                await bob.complete(types.PromptReference(name="p.ann_week"), {"name": "topic", "value": "x"})
            with pytest.raises(MCPError) as read:
                await bob.read_resource("p+note://ann/diary")
            bobs_note = await bob.read_resource("p+note://bob/diary")
    assert anns_prompt.messages[0].content == types.TextContent(text="ann's week")
    assert anns_note.contents == [types.TextResourceContents(uri="p+note://ann/diary", text="ann's secrets")]
    assert anns_completion.completion.values == ["ann-x"]
    # Exactly as for a name nobody has: the gateway knows no such prompt for bob (and suggests only bob's own).
    assert refusal(unknown) == (types.INVALID_PARAMS, refusal(unknown)[1])
    assert refusal(anns) == (types.INVALID_PARAMS, refusal(unknown)[1].replace("nobodys", "ann"))
    assert refusal(completion) == refusal(anns)
    assert "ann" not in refusal(unknown)[1]
    # A URI names its server, so bob's own process answers for bob: it has no such note.
    assert "Unknown resource note://ann/diary" in refusal(read)[1]
    assert bobs_note.contents == [types.TextResourceContents(uri="p+note://bob/diary", text="bob's secrets")]


async def test_what_a_users_process_listed_wrong_is_not_shown_to_another_user(gateway: str) -> None:
    with anyio.fail_after(60):
        await listed(gateway, "ann")  # ann's process of `f` lists a resource without a URI, named after her
        async with httpx2.AsyncClient(headers=as_user("bob")) as http:
            health = (await http.get(f"{gateway}/healthz")).json()
    assert health["servers"]["f"]["state"] == "up"
    assert "ann" not in json.dumps(health)


class Listener:
    """What list changes a client session heard, in order."""

    def __init__(self) -> None:
        self.heard: list[str] = []
        self.changed = anyio.Event()

    async def message(self, message: Any) -> None:
        if isinstance(message, types.ResourceListChangedNotification | types.PromptListChangedNotification):
            self.heard.append(message.method)
            self.changed.set()


async def test_a_change_in_one_identitys_process_is_told_and_listed_to_that_identity_alone(gateway: str) -> None:
    ann, bob = Listener(), Listener()
    await listed(gateway, "ann")  # both processes up before the sessions below: a start is news to older ones
    await listed(gateway, "bob")
    async with (
        http_client(gateway, mode="legacy", headers=as_user("ann"), message_handler=ann.message) as ann_client,
        http_client(gateway, mode="legacy", headers=as_user("bob"), message_handler=bob.message) as bob_client,
    ):
        with anyio.fail_after(60):
            await ann_client.list_resources()
            await bob_client.list_resources()
            await ann_client.call_tool("p.add_note", {"name": "plans"})  # in ann's process: ann's news alone
            await ann.changed.wait()
            anns = [r.uri for r in (await ann_client.list_resources()).resources]
            bobs = [r.uri for r in (await bob_client.list_resources()).resources]
            await bob_client.call_tool("p.touch_prompts", {})  # bob's first news, unless ann's leaked
            await bob.changed.wait()
    assert "p+note://ann/plans" in anns and "p+note://ann/plans" not in bobs
    assert ann.heard == ["notifications/resources/list_changed"]
    assert bob.heard == ["notifications/prompts/list_changed"]


async def test_a_change_in_one_identitys_process_reaches_that_identitys_2026_listen_streams_alone(gateway: str) -> None:
    await listed(gateway, "ann")  # both processes up before the streams below: a start is news to older ones
    await listed(gateway, "bob")
    async with (
        http_client(gateway, mode="auto", headers=as_user("ann")) as ann,
        http_client(gateway, mode="auto", headers=as_user("bob")) as bob,
        ann.listen(resources_list_changed=True, prompts_list_changed=True) as ann_stream,
        bob.listen(resources_list_changed=True, prompts_list_changed=True) as bob_stream,
    ):
        with anyio.fail_after(60):
            await ann.call_tool("p.add_note", {"name": "ideas"})  # in ann's process
            anns = await ann_stream.__anext__()
            await bob.call_tool("p.touch_prompts", {})  # in bob's: his first event, unless ann's leaked
            bobs = await bob_stream.__anext__()
            bobs_list = [r.uri for r in (await bob.list_resources()).resources]
    assert isinstance(anns, ResourcesListChanged)
    assert isinstance(bobs, PromptsListChanged)
    assert not any(uri.startswith("p+note://ann/") for uri in bobs_list)


async def test_lists_with_a_per_user_server_are_private_to_a_2026_client(gateway: str) -> None:
    """Each identity is listed its own process's items: no shared cache may hand one person's list to another."""
    with anyio.fail_after(60):
        async with http_client(gateway, mode="auto", headers=as_user("ann")) as ann:
            listings: list[types.CacheableResult] = [
                await ann.list_tools(),
                await ann.list_prompts(),
                await ann.list_resources(),
            ]
    assert {listing.cache_scope for listing in listings} == {"private"}
    assert all(listing.ttl_ms > 0 for listing in listings)
