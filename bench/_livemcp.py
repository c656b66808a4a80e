"""LiveMCPBench for bench.find_quality: its 527-tool catalog, its tasks and steps as labelled queries, and a client's
model played from `bench/livemcptool/sampled.json` (the data and how it was derived: bench/livemcptool/NOTICE.md).

Two measures over the same catalog, both unseen (nothing is tuned on them, no expansion is written from them):
* **whole task** (`tasks`): each task's question as one query, found at k when any of its annotated tools is in the
  top k;
* **one query per step** (`steps`): each annotated step that asks for a tool (`steps.json`) as its own query, found at
  k when any of the tools it was paired with is in the top k — the way find_tools' description asks to be used.

A query is cut at 1,000 characters (find_tools' query limit); one whose tools are not in the catalog is left out.
"""

import asyncio
import json
import re
from pathlib import Path
from typing import cast

import mcp.types as types

from gateway.middleware.exposure.expansions import Expansions
from gateway.middleware.exposure.sampling import Sampler
from gateway.middleware.exposure.search import SearchIndex
from gateway.routing.catalog import Entry
from gateway.store.local.expansions import LocalExpansions
from gateway.store.local.sampled import LocalSampled

LIVE = Path(__file__).with_name("livemcptool")
Entries = list[tuple[str, str, types.Tool]]
"""A catalog: (exposed name, server, tool)."""
Labelled = list[tuple[str, set[str]]]
"""Queries, each with the exposed names of the tools that answer it."""


def entries() -> Entries:
    servers = json.loads((LIVE / "tools.json").read_text(encoding="utf-8"))
    return [
        (
            f"{s['server']}.{t['name']}",
            s["server"],
            types.Tool(name=t["name"], description=t["description"], input_schema=t["inputSchema"]),
        )
        for s in servers
        for t in s["tools"]
    ]


def _labelled(rows: list[tuple[str, list[str]]]) -> Labelled:
    exposed: dict[str, set[str]] = {}
    for full, _server, tool in entries():
        exposed.setdefault(tool.name, set()).add(full)
    labelled = [(q[:1_000], set().union(*(exposed.get(n, set()) for n in tools))) for q, tools in rows]
    return [(q, e) for q, e in labelled if e]


def tasks() -> Labelled:
    rows = json.loads((LIVE / "tasks.json").read_text(encoding="utf-8"))
    return _labelled([(t["q"], t["tools"]) for t in rows])


def steps(parity: int | None = None) -> Labelled:
    """Every step, or those of the even (`parity` 0) or odd (1) numbered tasks (a task's steps stay together)."""
    rows = json.loads((LIVE / "steps.json").read_text(encoding="utf-8"))
    return _labelled([(s["q"], s["tools"]) for s in rows if parity is None or s["task"] % 2 == parity])


def sampled(catalog: Entries) -> SearchIndex:
    """hybrid + expansions with what a client's model wrote for each tool through sampling: the bench plays the model,
    answering each of the gateway's sampling requests (`Sampler`: its prompt, its parser, its store) with the entries
    of `bench/livemcptool/sampled.json` for the tools a request names (written from tool text alone: its note)."""
    written = json.loads((LIVE / "sampled.json").read_text(encoding="utf-8"))["tools"]
    index = SearchIndex()
    index.expansions = expansions = Expansions(LocalExpansions(), sampled_store=LocalSampled())
    sampler = Sampler(expansions)
    tools = [Entry(name, server, tool.name, tool) for name, server, tool in catalog]

    async def model(request: types.CreateMessageRequest) -> types.CreateMessageResult:
        asked = re.findall(r"^- (\S+):", cast(types.TextContent, request.params.messages[0].content).text, re.MULTILINE)
        text = json.dumps({name: written[name] for name in asked if name in written})
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=text), model="file"
        )

    async def ask() -> None:
        while wanted := sampler.wanted(tools):
            await sampler.run("bench", model, wanted)

    asyncio.run(ask())
    index.build(catalog)
    return index
