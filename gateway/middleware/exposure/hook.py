"""Exposure at the front door (first in the chain): the session's `tools/list`, its names, find and call.

* `tools/list` is answered from the session's view (`gateway.middleware.exposure.view`).
* `tools/call`: the client's name (its session name, or a reference name) becomes the registry's name
  before any other middleware sees the call, and what it resolved to (server, the server's own name, whether
  it declares an output schema) is written onto the call for the forward, which then reads no catalog;
  `gateway.call_tool {name, arguments}` is unwrapped here into that very call, so it takes exactly the path of
  a direct call (versions, observe, bootstrap, steering, size guard); `gateway.find_tools` is answered here.
  A hidden tool called by name works as any other, and joins the session's list (promotion), as do the tools
  a search returns. A session any replica may serve (2026 era, Redis store) reads its promotions from the
  store before listing or promoting, and writes them back when they changed: one round trip, only on
  `tools/list`, a search, or a call of a hidden tool.
* A tool the policy denies the session is neither listed nor found, and every call naming it is refused, naming
  the rule: a direct call, `gateway.call_tool` (itself, and the tool it names), `gateway.find_tools` itself. The
  exposure view's policy hook is the one place the policy meets tools (`gateway.middleware.policy`).
* An unknown name is refused with the closest names the session may see, in its names; so is an unknown
  `server` of find_tools.
* A list or a search offers the client's model the tools it shows that lack expansions (`sampling.py`: in the
  background, for a client that offers sampling).
* A search, then a call of a tool it (or a later search before that call) found, teaches the index the turn's
  queries as requests in users' words for that tool (`gateway.middleware.exposure.expansions`).
"""

import difflib
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable

import mcp.types as types

from gateway.errors import DownstreamUnavailable, UnknownName
from gateway.middleware.exposure import find
from gateway.middleware.exposure.listed import OWN_SERVERS
from gateway.middleware.exposure.sampling import Sampler
from gateway.middleware.exposure.usage import UsageTally
from gateway.middleware.exposure.view import Exposure
from gateway.pipeline import Call, Middleware
from gateway.results import Hint, text_result
from gateway.routing.catalog import Catalog, Entry
from gateway.routing.rename import Names, reference
from gateway.session import Session

logger = logging.getLogger(__name__)

FIND = ("gateway", find.FIND_TOOLS.name)
CALL = ("gateway", find.CALL_TOOL.name)


SignIns = Callable[[str, set[str]], Awaitable[list[str]]]
"""(owner digest, servers) -> those of the servers that person must sign in to first."""


class ExposureMiddleware(Middleware):
    name = "exposure"
    methods = frozenset({"tools/list", "tools/call"})

    def __init__(
        self,
        exposure: Exposure,
        catalog: Callable[[], Awaitable[Catalog]],
        *,
        notify: Callable[[str], None] = lambda key: None,
        answer_budget: int = 20_000,
        usage: UsageTally | None = None,
        sampler: Sampler | None = None,
        sign_ins: SignIns | None = None,
    ) -> None:
        self.exposure = exposure
        self.sign_ins = sign_ins
        """Which servers of a search's hits the caller must sign in to first (None: no server signs people in)."""
        self.catalog = catalog
        self.notify = notify
        """Sends `notifications/tools/list_changed` to one session (by key)."""
        self.answer_budget = answer_budget
        self.usage = usage
        """Counts each identity's calls; `auto` lists over budget by them (None: catalog order)."""
        self.sampler = sampler
        """Asks the client's model for expansions of the tools a list or search shows it (None: never asks)."""

    async def on_request(self, call: Call) -> None:
        catalog = await self.catalog()
        if call.method == "tools/list":
            await self._pull(call.session)
            if self.exposure.searching(catalog, self.exposure.view(call.session).rule, call.session.task_mark):
                self.exposure.index.warm()  # hidden tools: find_tools is the way to them, and a search comes next
            if self.usage is not None and self.exposure.fills(catalog, call.session):
                view = self.exposure.view(call.session)
                view.used = await self.usage.top(call.session.identity.owner, view.rule.max_tools)
            call.result = types.ListToolsResult(tools=self.exposure.listed(catalog, call.session))
            self._sample(catalog, call)
            return
        names = call.names = self.exposure.session_names(catalog, call.session)  # the render stage's too
        canonical = names.resolve(str(call.params.get("name", "")))
        entry = catalog.tools.get(canonical)
        if entry is not None and canonical == names.by_original.get(CALL):
            self._admit(call, entry)  # a rule may deny gateway.call_tool itself, as any tool
            try:
                inner, arguments, notes = find.call_request(call.params.get("arguments"))
            except find.BadArguments as exc:
                call.result = text_result(str(exc), error=True)
                return
            call.hints.extend(Hint("exposure", note) for note in notes)
            canonical = names.resolve(inner)
            if canonical == names.by_original.get(CALL):
                call.result = text_result("gateway.call_tool cannot call itself; name the tool to call.", error=True)
                return
            call.params = {"name": canonical, "arguments": arguments}
            entry = catalog.tools.get(canonical)
        if entry is None:
            down = catalog.unlisted_owner(canonical)
            if down is not None:  # a server that never came up: said so, as the forward says of one that went down
                raise DownstreamUnavailable(down, "not up", None)
            raise UnknownName("tool", str(call.params.get("name")), self._closest(catalog, call, names))
        self._admit(call, entry)
        if entry.server not in OWN_SERVERS:
            if self.usage is not None:
                self.usage.note(call.session.identity.owner, canonical)
            await self.exposure.index.expansions.called(call.session.key, canonical)  # learns if a search found it
        call.params["name"] = canonical
        call.reference = reference(entry.server, entry.original)
        if canonical == names.by_original.get(FIND):
            await self._find(catalog, call, names)
            return
        if self.exposure.hidden(catalog, call.session, canonical):
            await self._promote(catalog, call, [canonical])
        # What the name resolved to, for the stages after this one and the forward (which then reads no catalog).
        call.server, call.tool = entry.server, entry.original
        call.has_output_schema = getattr(entry.item, "output_schema", None) is not None

    async def spilled(self, session: Session) -> bool:
        """A result of `session` was spilled (the size guard says so): read_output joins its list and the client is
        told. Whether the client's last list already held read_output (else the notice shows the call_tool way)."""
        catalog = await self.catalog()
        had = self.exposure.view(session).reads_output
        if self.exposure.spilled(catalog, session):
            self.notify(session.key)
        return had

    def _admit(self, call: Call, entry: Entry) -> None:
        """Refuse a tool the policy denies this session (naming the rule), before anything answers or runs it."""
        denial = self.exposure.denial(call.session, entry)
        if denial is not None:
            call.refused_by = "policy"
            raise denial

    async def _find(self, catalog: Catalog, call: Call, names: Names) -> None:
        args = call.params.get("arguments") or {}
        try:
            servers = {e.server for e in catalog.tools.values() if self.exposure.visible(call.session, e)}
            request = find.find_request(args, servers)
        except find.BadArguments as exc:
            call.result = text_result(str(exc), error=True)
            return
        if request.query is None:  # browse: the server's tool names
            server = request.server or ""
            listed = [
                names.to_session(n)
                for n, e in catalog.tools.items()
                if e.server == server and self.exposure.visible(call.session, e)
            ]
            call.result = find.browse(server, listed, self.answer_budget)
            return
        learned = self.exposure.index.expansions
        await learned.refresh()  # what other replicas learned (at most every few seconds)
        self._sample(catalog, call)
        matches = self.exposure.search(catalog, call.session, request.query, limit=request.limit, server=request.server)
        learned.searched(call.session.key, request.query, [h.name for h in matches.hits])
        owner, found = call.session.identity.owner, {h.server for h in matches.hits}
        needed = [] if self.sign_ins is None or not found else await self.sign_ins(owner, found)
        if needed:
            request.notes.append(
                f"Sign-in needed (for you) on {', '.join(needed)}: calling its tools answers with the link to sign in."
            )
        call.result = find.answer(request, matches, names.to_session, self.answer_budget)
        if matches.hits:  # the answer says how to call them: no hint beside it (it stays within 1,500 chars)
            await self._promote(catalog, call, [h.name for h in matches.hits])

    def _sample(self, catalog: Catalog, call: Call) -> None:
        """Offer the client's model the downstream tools this session may see that have no expansions (in the
        background: the list or search does not wait)."""
        if self.sampler is None or not self.exposure.config.sampled_expansions:
            return
        session = call.session
        who = f"{session.identity.owner}\0{session.client}"
        self.sampler.offer(who, call.peer, catalog, lambda entry: self.exposure.visible(session, entry))

    async def _promote(self, catalog: Catalog, call: Call, canonical: list[str]) -> None:
        await self._pull(call.session)
        if self.exposure.promote(catalog, call.session, canonical):
            logger.debug("session %s: promoted %s", call.session.key, canonical)
            await call.session.promote(list(self.exposure.view(call.session).promoted))
            self.notify(call.session.key)

    async def _pull(self, session: Session) -> None:
        """What other replicas promoted in this session, when it is shared."""
        shared = await session.promoted()
        if shared is not None:
            self.exposure.view(session).promoted = OrderedDict.fromkeys(shared)

    def _closest(self, catalog: Catalog, call: Call, names: Names) -> list[str]:
        """Up to three names: by spelling first, then by what the name's words find."""
        asked = str(call.params.get("name", ""))
        visible = [names.to_session(n) for n, e in catalog.tools.items() if self.exposure.visible(call.session, e)]
        closest = difflib.get_close_matches(asked, visible, n=3, cutoff=0.6)
        try:
            found = self.exposure.search(catalog, call.session, asked, limit=3).hits
        except ValueError:  # a name longer than a query may be: spelling alone then
            found = []
        for hit in found:
            name = names.to_session(hit.name)
            if name not in closest:
                closest.append(name)
        return closest[:3]
