"""Expansions asked of the client's model through MCP sampling (`gateway.middleware.exposure.sampling`), through a
running gateway and a real SDK client whose sampling callback plays the model: it reads the tools off the prompt
and writes requests in everyday words from each tool's own text (a small thesaurus of the words a description
uses; it never sees a query). Then a find_tools query in users' words finds the tool it did not before."""

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client

from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.middleware.exposure.expansions import description_hash, sampled_key
from gateway.middleware.exposure.listed import SEARCH_HINT_KEY
from gateway.middleware.exposure.sampling import BATCH_TOOLS, parse
from gateway.routing.catalog import Entry
from tests.harness import http_client, http_gateway, kitchen, write_config

pytestmark = pytest.mark.anyio

EVERYDAY = {
    "length": "how many characters",
    "report": "tell me",
    "text": "my sentence",
    "copies": "repeated",
    "process": "program number",
    "unchanged": "exactly as written",
}
"""The test model's vocabulary: a description's word -> how a user says it."""
QUERY = "how many characters are in my sentence"
"""The user's words for kitchen's `measure` ("Report the length of the text."): before sampling, find_tools does
not rank it first for them."""
MEASURE = "Report the length of the text."


def written_for(description: str) -> list[str]:
    """What the test model writes for a tool: a request per everyday phrase of its description's words."""
    said = [EVERYDAY[w] for w in re.findall(r"[a-z]+", description.lower()) if w in EVERYDAY]
    return [f"{phrase}, please" for phrase in said] + ([" and ".join(said)] if len(said) > 1 else [])


class Model:
    """A sampling callback that answers as a model would, from the prompt's `- name: description` lines."""

    def __init__(self, answer: Callable[[dict[str, str]], Any] | None = None) -> None:
        self.prompts: list[str] = []
        self.answer = answer or (lambda tools: {name: written_for(text) for name, text in tools.items()})
        self.release: anyio.Event | None = None
        self.asked_again = anyio.Event()
        """Set by the second request: the gateway kept the first one's answer before it sent it."""

    async def __call__(self, context: Any, params: types.CreateMessageRequestParams) -> Any:
        text = params.messages[0].content.text  # type: ignore[union-attr]
        self.prompts.append(text)
        if len(self.prompts) == 2:
            self.asked_again.set()
        if self.release is not None:
            await self.release.wait()
        tools = dict(re.findall(r"^- (\S+): (.*)$", text, re.MULTILINE))
        answer = self.answer(tools)
        if isinstance(answer, types.ErrorData):
            return answer
        block = types.TextContent(
            type="text", text=answer if isinstance(answer, str) else str(answer).replace("'", '"')
        )
        return types.CreateMessageResult(role="assistant", content=block, model="test-thesaurus")


def gateway_for(tmp_path: Path, **exposure: Any) -> Gateway:
    exposure = {"sampled_expansions": True, **exposure}  # off by default: each test here turns it on
    config = write_config(
        tmp_path, {"k": kitchen("k")}, think={"state_dir": str(tmp_path / "state")}, exposure=exposure
    )
    return Gateway(load_config(config))


async def found(client: Client, query: str) -> list[str]:
    result = await client.call_tool("gateway.find_tools", {"query": query})
    return [hit["name"] for hit in (result.structured_content or {})["tools"]]


MEASURE_KEY = sampled_key("k", "measure", description_hash(MEASURE))


async def test_a_tool_without_a_pack_is_found_by_what_the_clients_model_wrote_for_it(tmp_path: Path) -> None:
    gateway, model = gateway_for(tmp_path), Model()
    async with gateway.running(), Client(gateway.front.server, mode="legacy", sampling_callback=model) as client:
        with anyio.fail_after(30):
            assert (await found(client, QUERY))[:1] != ["k.measure"]
            await gateway.sampler.idle()  # the search offered the catalog: the model was asked meanwhile
            kept = await gateway.stores.sampled.all()
            assert kept[MEASURE_KEY] == written_for(MEASURE)  # kept by server, tool and description hash
            assert (await found(client, QUERY))[:1] == ["k.measure"]
            await client.list_tools()
            await gateway.sampler.idle()
    prompts = "\n".join(model.prompts)
    assert f"- k.measure: {MEASURE}" in prompts
    assert QUERY not in prompts and "gateway." not in prompts  # tool text only; the gateway's own tools have theirs
    assert all(text.count("\n- ") <= BATCH_TOOLS for text in model.prompts)  # a batch of tools per request
    assert prompts.count("- k.measure:") == 1  # each tool is asked once: the list after the search asked nothing


async def test_a_list_and_a_search_answer_while_the_clients_model_has_not(tmp_path: Path) -> None:
    gateway, model = gateway_for(tmp_path), Model()
    model.release = anyio.Event()
    async with gateway.running(), Client(gateway.front.server, mode="legacy", sampling_callback=model) as client:
        with anyio.fail_after(30):
            listed = await client.list_tools()
            assert listed.tools
            assert (await found(client, QUERY))[:1] != ["k.measure"]  # answered while the model still writes
            assert len(model.prompts) == 1  # one run at a time: the search started none beside it
            model.release.set()
            await gateway.sampler.idle()
            assert (await found(client, QUERY))[:1] == ["k.measure"]


@pytest.mark.parametrize(
    "answer",
    [
        lambda tools: types.ErrorData(code=-1, message="User rejected sampling request"),
        lambda tools: "I cannot help with that.",
        lambda tools: {"k.unknown_tool": ["how many characters are there"], "k.measure": "not a list"},
        lambda tools: {name: ["write to bob@example.com now", "see https://x.example/a b", "ok"] for name in tools},
    ],
    ids=["refusal", "prose", "wrong shape", "private or too short"],
)
async def test_a_refusal_or_an_unusable_answer_is_ignored(tmp_path: Path, answer: Callable[..., Any]) -> None:
    gateway, model = gateway_for(tmp_path), Model(answer)
    async with gateway.running(), Client(gateway.front.server, mode="legacy", sampling_callback=model) as client:
        with anyio.fail_after(30):
            before = await found(client, QUERY)
            await gateway.sampler.idle()
            assert await gateway.stores.sampled.all() == {}
            assert await found(client, QUERY) == before
            asked = len(model.prompts)
            await client.list_tools()  # a refusing client is not asked again; a tool is asked once
            await gateway.sampler.idle()
        async with Client(gateway.front.server, mode="legacy", sampling_callback=model) as again:
            await again.list_tools()  # nor in its next session
            await gateway.sampler.idle()
            assert len(model.prompts) == asked == 1


async def test_by_default_the_gateway_never_asks_a_clients_model(tmp_path: Path) -> None:
    gateway, model = Gateway(load_config(write_config(tmp_path, {"k": kitchen("k")}))), Model()
    async with gateway.running(), Client(gateway.front.server, mode="legacy", sampling_callback=model) as client:
        with anyio.fail_after(30):
            await client.list_tools()
            await found(client, QUERY)
            await gateway.sampler.idle()
    assert model.prompts == []


async def test_a_2026_era_client_is_not_asked_outside_its_calls(tmp_path: Path) -> None:
    gateway, model = gateway_for(tmp_path), Model()
    async with gateway.running(), Client(gateway.front.server, mode="auto", sampling_callback=model) as client:
        with anyio.fail_after(30):
            await client.list_tools()
            await found(client, QUERY)
            await gateway.sampler.idle()
    assert model.prompts == []  # its era has no server-to-client request but within a call, which would hold it


async def test_a_native_clients_search_hint_carries_what_the_model_wrote(tmp_path: Path) -> None:
    gateway, model = gateway_for(tmp_path), Model()
    claude = types.Implementation(name="claude-code", version="2.1.0")
    async with (
        gateway.running(),
        Client(gateway.front.server, mode="legacy", sampling_callback=model, client_info=claude) as client,
    ):
        with anyio.fail_after(30):
            await client.list_tools()
            await gateway.sampler.idle()
            measure = next(t for t in (await client.list_tools()).tools if t.name == "k.measure")
    assert (measure.meta or {})[SEARCH_HINT_KEY].startswith("tell me please how many characters my sentence")


def test_the_answer_is_read_for_the_tools_asked_about_only() -> None:
    asked = [Entry("k.measure", "k", "measure", types.Tool(name="measure", description=MEASURE, input_schema={}))]
    answer = types.CreateMessageResult(
        role="assistant",
        model="m",
        content=types.TextContent(
            type="text",
            text='Sure! ```json\n{"k.measure": ["count the letters in this", "count the letters in this", 7],'
            ' "k.other": ["not asked about"]}\n```',
        ),
    )
    assert parse(answer, asked) == {"k.measure": ["count the letters in this"]}


async def test_a_client_over_http_is_asked_on_its_sessions_own_stream(tmp_path: Path) -> None:
    """Streamable HTTP: the request rides the session's standalone (GET) stream, outside the list that offered it."""
    servers = {"k": kitchen("k"), "j": kitchen("j")}  # 20 tools: two requests
    exposure = {"sampled_expansions": True}
    config = write_config(tmp_path, servers, think={"state_dir": str(tmp_path / "state")}, exposure=exposure)
    model = Model()
    async with http_gateway(config) as base, http_client(base, mode="legacy", sampling_callback=model) as client:
        with anyio.fail_after(60):
            await client.list_tools()
            await model.asked_again.wait()
            first = re.findall(r"^- (\w+\.measure):", model.prompts[0], re.MULTILINE)  # the one the first answer covers
            assert len(first) == 1 and (await found(client, QUERY))[:1] == first
