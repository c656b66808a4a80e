"""Expansions asked of the client's model through MCP sampling (DESIGN §14).

A tool without a shipped pack entry has only its server's words to be found by. A client that offers sampling
has a model: the gateway asks it, in the background, to write a few requests in users' words for such tools, from
each tool's name and description alone (never a user's query, never another tool's text). What it answers is kept
in the store by server, tool and description hash (`expansions.sampled_key`; shared by replicas) and joins the
tool's search text and search hint (`Expansions.of`).

When: a `tools/list` or `find_tools` of a handshake-era client that declared `sampling` (the 2026 era has no
server-to-client requests outside a call's own input rounds, which would hold the call) offers the session's
catalog (`offer`); it returns at once. One run at a time per process asks up to BATCHES requests of BATCH_TOOLS
tools each, on the connection's standalone channel; the next list or search continues with the next tools. Each
tool is asked once per process (ASKED bounds that memory); another replica reads the answer from the store. A tool
whose requests an operator removed (the page: `Expansions.forget_sampled`) is not asked again until its description
changes.

What is ignored: a refusal or an error (that client is not asked again: a person who declined an approval prompt
is not prompted again), no answer within TIMEOUT_S, and an answer that is not the JSON asked for, or names other
tools, or whose requests are empty, too long, or carry an e-mail address, a URL or a token (`expansions.PRIVATE`).
"""

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import mcp.types as types
from mcp import MCPError
from pydantic import ValidationError

from gateway.inflight import Peer
from gateway.middleware.exposure.expansions import (
    PRIVATE,
    REQUEST_CHARS,
    Expansions,
    description_hash,
    sampled_key,
    shipped_for,
)
from gateway.middleware.exposure.listed import OWN_SERVERS
from gateway.routing.catalog import Catalog, Entry

logger = logging.getLogger(__name__)

BATCH_TOOLS = 10
"""Tools per sampling request: one request, one approval, one answer of some 400 words."""
BATCHES = 5
"""Requests per run: a run asks about at most 50 tools; a catalog of 500 is covered by ten lists or searches."""
PER_TOOL = 5
"""Requests kept per tool (the prompt asks for 4; a fifth is tolerated, more are cut)."""
MIN_CHARS = 8
"""A request shorter than this is no phrase a user types."""
DESCRIPTION_CHARS = 400
"""What of a description the prompt quotes: its purpose comes first."""
MAX_TOKENS = 1_500
TIMEOUT_S = 120.0
"""How long one answer may take (a person may have to approve the request first)."""
ASKED = 20_000
"""Tools remembered as asked; past it, nothing more is asked until the process restarts."""
REFUSED = 10_000
"""Clients (session keys) remembered as having refused."""

SYSTEM = "You write short search requests for a tool index. Answer with JSON only."
INSTRUCTIONS = (
    "For each tool below, write 4 different requests (4 to 12 words each) that a user might type when they need "
    "that tool, in everyday words rather than the tool's own terms. Use only what the tool's name and description "
    'say. Answer with one JSON object and nothing else: {"<tool name>": ["<request>", ...], ...}.\n\nTools:\n'
)


def prompt(tools: list[Entry]) -> types.CreateMessageRequest:
    """One sampling request about `tools`: each as `- name: description` (exposed name, the description cut)."""
    lines = "".join(
        f"- {e.exposed}: {' '.join((e.item.description or '').split())[:DESCRIPTION_CHARS]}\n" for e in tools
    )
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=INSTRUCTIONS + lines))
    params = types.CreateMessageRequestParams(
        messages=[message], system_prompt=SYSTEM, max_tokens=MAX_TOKENS, include_context="none", temperature=0.3
    )
    return types.CreateMessageRequest(params=params)


def parse(answer: Any, tools: list[Entry]) -> dict[str, list[str]]:
    """The requests `answer` (a CreateMessageResult) gives each of `tools` (by exposed name); what does not fit
    the asked shape is dropped, a tool without a usable request is left out."""
    content = getattr(answer, "content", None)
    text = getattr(content, "text", None)
    if not isinstance(text, str):
        return {}
    start, end = text.find("{"), text.rfind("}")
    try:
        written = json.loads(text[start : end + 1]) if 0 <= start < end else None
    except ValueError:
        return {}
    if not isinstance(written, dict):
        return {}
    out: dict[str, list[str]] = {}
    for entry in tools:
        requests = written.get(entry.exposed)
        if not isinstance(requests, list):
            continue
        kept = [" ".join(r.split()) for r in requests if isinstance(r, str)]
        kept = [r for r in kept if MIN_CHARS <= len(r) <= REQUEST_CHARS and not PRIVATE.search(r)]
        if kept:
            out[entry.exposed] = list(dict.fromkeys(kept))[:PER_TOOL]
    return out


def _downstream(catalog: Catalog) -> Iterator[Entry]:
    return (e for e in catalog.tools.values() if e.server not in OWN_SERVERS and isinstance(e.item, types.Tool))


Send = Callable[[types.CreateMessageRequest], Awaitable[Any]]


def _sender(peer: Peer) -> Send:
    """How to ask `peer`'s client outside any of its requests: on its connection's standalone channel."""
    session = peer.session
    if peer.request_id is None:  # a lane's call: the connection itself
        return lambda request: session.send_request(request, opts={"timeout": TIMEOUT_S})
    # The request's session, with no related request id: the standalone channel, which outlives the request.
    return lambda request: session.send_request(
        request, types.CreateMessageResult, request_read_timeout_seconds=TIMEOUT_S
    )


class Sampler:
    """Asks clients' models for expansions of the tools that have none, one background run at a time."""

    def __init__(self, expansions: Expansions) -> None:
        self.expansions = expansions
        self._asked: set[str] = set()
        self._refused: set[str] = set()
        self._tg: anyio.abc.TaskGroup | None = None
        self._busy = False
        self._settled: Catalog | None = None
        """The catalog whose every downstream tool was asked about (or has expansions)."""
        self._idle = anyio.Event()
        self._idle.set()

    @asynccontextmanager
    async def running(self) -> AsyncIterator["Sampler"]:
        """Ask in the background while inside, in a task group of its own (a run in flight is cancelled at exit)."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                yield self
            finally:
                self._tg = None
                tg.cancel_scope.cancel()

    async def idle(self) -> None:
        """Wait until no run is in flight."""
        await self._idle.wait()

    def wanted(self, entries: Iterable[Entry]) -> list[tuple[str, Entry]]:
        """The tools of `entries` with no pack entry and no sampled requests, not asked yet: (key, entry)."""
        out: list[tuple[str, Entry]] = []
        for entry in entries:
            description = entry.item.description or ""
            digest = description_hash(description)
            key = sampled_key(entry.server, entry.original, digest)
            # A tool without a description is asked too: its name is then all its users' words can meet.
            if key in self._asked or key in self.expansions.sampled or shipped_for(entry.original, digest):
                continue
            out.append((key, entry))
            if len(out) == BATCH_TOOLS * BATCHES:
                break
        return out

    def offer(self, client: str, peer: Peer | None, catalog: Catalog, visible: Callable[[Entry], bool]) -> None:
        """A client listed or searched `catalog` (of which it may see the `visible` tools): when it can be asked and
        some of its downstream tools lack expansions, start a run. `client` is who a refusal is remembered by (an
        identity and its client's name: a person who declined is not asked again in their next session). Never
        waits."""
        if self._tg is None or self._busy or peer is None or peer.modern or peer.session is None:
            return
        if peer.capabilities is None or peer.capabilities.sampling is None or client in self._refused:
            return
        if catalog is self._settled or len(self._asked) >= ASKED:
            return
        wanted = self.wanted(e for e in _downstream(catalog) if visible(e))
        if not wanted:
            if not self.wanted(_downstream(catalog)):
                self._settled = catalog  # every tool asked: later lists and searches of it skip the pass (3 ms)
            return
        self._busy, self._idle = True, anyio.Event()
        self._tg.start_soon(self.run, client, _sender(peer), wanted)

    async def run(self, client: str, send: Send, wanted: list[tuple[str, Entry]]) -> None:
        """Ask `client` (by `send`) about `wanted` (`wanted()`), a batch per request; `offer` runs it in the background
        (the bench, playing a client's model, in the foreground)."""
        self._asked.update(key for key, _e in wanted)
        try:
            # What another replica's client wrote, or an operator removed, since this replica last read the store
            # (a replica's first list comes before its first search reads it) is not asked again.
            await self.expansions.refresh()
            wanted = [(key, entry) for key, entry in wanted if key not in self.expansions.sampled]
            for start in range(0, len(wanted), BATCH_TOOLS):
                batch = wanted[start : start + BATCH_TOOLS]
                if not await self._ask(client, send, batch):
                    self._asked.difference_update(key for key, _e in wanted[start:])  # another client may answer
                    return
        finally:
            self._busy = False
            self._idle.set()

    async def _ask(self, client: str, send: Send, batch: list[tuple[str, Entry]]) -> bool:
        """One request about `batch`; False when this client refused or cannot be asked (the run stops)."""
        tools = [entry for _key, entry in batch]
        try:
            answer = await send(prompt(tools))
        except (MCPError, TimeoutError) as exc:
            logger.info("sampled expansions: a client did not answer (%s); it is not asked again", exc)
            if len(self._refused) < REFUSED:
                self._refused.add(client)
            return False
        except ValidationError as exc:
            logger.info("sampled expansions: an invalid answer (%d problems) is ignored", exc.error_count())
            return True
        except Exception as exc:  # noqa: BLE001 - a gone connection is the client's business, never the gateway's
            logger.info("sampled expansions: asking failed (%s: %s)", type(exc).__name__, exc)
            return False
        written = parse(answer, tools)
        for key, entry in batch:
            if entry.exposed in written:
                await self.expansions.add_sampled(key, written[entry.exposed])
        logger.info(
            "sampled expansions: the client's model wrote requests for %d of %d tools", len(written), len(tools)
        )
        return True
