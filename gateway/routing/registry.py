"""The namespaced catalog of all downstreams (TTL-cached), name resolution, and the forward."""

import difflib
import logging
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from fnmatch import fnmatchcase
from operator import attrgetter
from typing import Any

import anyio
import mcp.types as types

from gateway.config import NamespaceConfig, ToolFilterConfig
from gateway.downstreams.downstream import Downstream
from gateway.downstreams.pool import Pool
from gateway.downstreams.relay import Relay
from gateway.downstreams.state import State
from gateway.errors import DownstreamError, DownstreamFailed, DownstreamUnavailable, UnknownName
from gateway.pipeline import Call
from gateway.routing import apps, names, signin
from gateway.routing.catalog import Catalog, Entry
from gateway.routing.features import PROMPT, READ, Features, Owners
from gateway.routing.personal import Personal
from gateway.routing.uris import Uris
from gateway.store.cache import SharedCache

logger = logging.getLogger(__name__)
_STATE = attrgetter("state")

KINDS = ("tools", "resources", "resource_templates", "prompts")
_NOTHING: list[Any] = []
DOWN = frozenset({State.DOWN, State.RESTARTING, State.STARTING})


def sanitize_tool(tool: types.Tool, exposed: str) -> types.Tool:
    """Rename, and repair schemas that would make the SDK reject the whole listing."""
    update: dict[str, Any] = {"name": exposed}
    schema = tool.input_schema
    if not isinstance(schema, dict) or schema.get("type") != "object":
        update["input_schema"] = {"type": "object", "additionalProperties": True}
    if tool.output_schema is not None and tool.output_schema.get("type") != "object":
        update["output_schema"] = None
    return tool.model_copy(update=update)


class Registry:
    """Owns the merged catalog and forwards calls to the downstream that owns a name."""

    def __init__(
        self,
        downstreams: Mapping[str, Downstream | Pool],
        *,
        namespace: NamespaceConfig,
        filters: Mapping[str, ToolFilterConfig],
        cache: SharedCache,
        on_changed: Callable[[str, str | None], None] | None = None,
        bare: str | None = None,
        relay: Relay | None = None,
    ) -> None:
        self.downstreams = dict(downstreams)
        self.uris = Uris(self.downstreams, bare)  # a live view: servers come and go with reloads
        self.relay = relay or Relay(logger_name=lambda server, name: name or server)
        self.features = Features(self.downstreams, self.uris, self.relay)
        self._bare = frozenset() if bare is None else frozenset({bare})
        self._ns = namespace
        self._filters = dict(filters)
        self._cache = cache
        self._on_changed = on_changed or (lambda kind, audience: None)
        self.personal = Personal(self.downstreams, self.uris, cache, namespace, self._bare, self.relay)
        self._merged: Catalog | None = None
        self._merged_from: tuple[int, ...] = ()
        # What the merged catalog was built from: it holds while none of it changed and no listing expired.
        self._merged_when: tuple[int, tuple[State, ...]] = (-1, ())
        self._fresh_until = float("-inf")

    def replace(self, server: str, downstream: Downstream | None, tools: ToolFilterConfig | None = None) -> None:
        """Put `downstream` under `server` (None removes it): the next catalog lists from it (a config reload)."""
        if downstream is None:
            self.downstreams.pop(server, None)
            self._filters.pop(server, None)
        else:
            self.downstreams[server] = downstream
            self._filters[server] = tools or ToolFilterConfig()
        for kind in KINDS:
            self._cache.invalidate(f"{server}:{kind}")
        self.personal.replaced(server)
        self._merged = None

    def list_changed(self, server: str, kind: str, audience: str | None = None) -> None:
        """A downstream said its list changed: drop its cached listing and tell the clients (`audience`: the
        identity whose own process of a per-user server it is: only its listing, only its clients)."""
        logger.debug("server %s: %s list changed", server, kind)
        if audience is not None:
            self.personal.changed(server, kind, audience)
            return self._on_changed(kind, audience)
        self._cache.invalidate(f"{server}:{kind}")
        if kind == "resources":
            self._cache.invalidate(f"{server}:resource_templates")
        self._on_changed(kind, None)

    async def _load(self, server: str, kind: str) -> list[Any]:
        try:
            return await self.downstreams[server].list_all(kind)
        except DownstreamFailed as exc:
            # The server is up but cannot list this kind (e.g. no resources/templates/list): cache the
            # empty answer for the TTL instead of asking again on every call.
            logger.info("server %s: no %s listing (%s)", server, kind, exc)
            return []

    async def _refresh(self, server: str, kind: str) -> None:
        try:
            await self._cache.get(f"{server}:{kind}", lambda: self._load(server, kind), ttl_s=self._ns.catalog_ttl_s)
        except DownstreamError as exc:
            logger.debug("server %s: %s listing not refreshed: %s", server, kind, exc)

    async def catalog(self) -> Catalog:
        """The merged catalog; only listings of servers that are up and whose TTL ran out are reloaded.

        A server that is not up contributes its last listing (or nothing); it announces a list change
        when it comes up, which invalidates its entries.
        """
        states = tuple(map(_STATE, self.downstreams.values()))  # every call: no generator frame
        if (
            self._merged is not None
            and self._merged_when == (self._cache.generation, states)
            and self._cache.now() < self._fresh_until
        ):
            return self._merged  # the per-call path: nothing to re-check
        up = [server for server, ds in self.downstreams.items() if ds.state is State.UP]
        stale = [
            (server, kind)
            for server in up
            for kind in self._kinds(server)
            if not self._cache.is_fresh(f"{server}:{kind}")
        ]
        if stale:
            async with anyio.create_task_group() as tg:
                for server, kind in stale:
                    tg.start_soon(self._refresh, server, kind)
        listings = {(s, k): self._cache.peek(f"{s}:{k}") or _NOTHING for s in self.downstreams for k in KINDS}
        # Listings are replaced, never mutated, so their identities tell whether a re-merge is needed.
        key = tuple(id(listing) for listing in listings.values())
        if self._merged is None or key != self._merged_from:
            self._merged, self._merged_from = self._merge(listings), key
        self._merged_when = (self._cache.generation, states)  # states as of the refresh: a change since re-checks
        expiries = (self._cache.expires_at(f"{s}:{k}") for s in up for k in self._kinds(s))
        self._fresh_until = min(expiries, default=float("inf"))
        return self._merged

    def fresh_for_s(self) -> float:
        """How long the last merged catalog stays as it is unless a server announces a change (which refreshes at
        once): until its first listing is due to be re-read, at most `catalog_ttl_s` (nothing up: nothing due)."""
        return max(0.0, min(self._fresh_until - self._cache.now(), self._ns.catalog_ttl_s))

    def _kinds(self, server: str) -> tuple[str, ...]:
        """What the shared catalog lists of `server`: a per-user server's tools only (the rest is `personal`)."""
        return ("tools",) if isinstance(self.downstreams[server], Pool) else KINDS

    async def view(self, call: Call) -> Catalog:
        """The catalog as `call`'s caller sees it where it may name what their own per-user processes list."""
        return await self.personal.for_call(await self.catalog(), call)

    def _merge(self, listings: dict[tuple[str, str], list[Any]]) -> Catalog:
        tools = [(s, t) for s in self.downstreams for t in listings[s, "tools"] if self._exposed(s, t.name)]
        prompts = [(s, p) for s in self.downstreams for p in listings[s, "prompts"]]
        sep, limit = self._ns.separator, self._ns.max_name_length
        tool_names = names.assign(((s, t.name) for s, t in tools), sep, limit, self._bare)
        prompt_names = names.assign(((s, p.name) for s, p in prompts), sep, limit, self._bare)
        catalog = Catalog()
        catalog.unlisted = {  # a per-user server idle with no process yet is not down: its next call starts one
            f"{s}{sep}": s
            for s, ds in self.downstreams.items()
            if self._cache.peek(f"{s}:tools") is None and not isinstance(ds, Pool)
        }
        for server, tool in tools:
            exposed = tool_names[server, tool.name]
            listed = apps.exposed(server, tool, self.uris)  # an MCP App's UI resource as the client reads it
            catalog.tools[exposed] = Entry(exposed, server, tool.name, sanitize_tool(listed, exposed))
        for server, prompt in prompts:
            exposed = prompt_names[server, prompt.name]
            catalog.prompts[exposed] = Entry(exposed, server, prompt.name, prompt.model_copy(update={"name": exposed}))
        public = self.personal.exposed  # a resource or template with its URI and name namespaced
        for server in self.downstreams:
            catalog.resources += [public(server, r) for r in listings[server, "resources"]]
            catalog.resource_templates += [public(server, t) for t in listings[server, "resource_templates"]]
        return catalog

    @property
    def merged(self) -> Catalog | None:
        """The last merged catalog (no I/O), None before the first `catalog()`."""
        return self._merged

    def input_schema(self, name: str) -> dict[str, Any] | None:
        """The exposed tool's input schema from the last merged catalog (no I/O: the SDK calls it per request)."""
        entry = None if self._merged is None else self._merged.tools.get(name)
        return None if entry is None else entry.item.input_schema  # type: ignore[union-attr]

    def _exposed(self, server: str, tool: str) -> bool:
        rules = self._filters.get(server)
        if rules is None:
            return True
        return any(fnmatchcase(tool, p) for p in rules.include) and not any(fnmatchcase(tool, p) for p in rules.exclude)

    def status(self) -> dict[str, dict[str, Any]]:
        """Per downstream: state, tool count (None until listed), restarts, protocol, last error; pools: processes."""
        out: dict[str, dict[str, Any]] = {}
        for name, ds in self.downstreams.items():
            tools = self._cache.peek(f"{name}:tools")
            out[name] = {
                "state": ds.state.value,
                "tools": None if tools is None else sum(1 for t in tools if self._exposed(name, t.name)),
                "restarts": ds.restarts,
                "protocol": ds.protocol_version,
                "last_error": ds.last_error,
                "failing_since": getattr(ds, "failing_since", None),  # a pool of per-user processes has none
                "next_try": getattr(ds, "next_try", None),
                "problems": [
                    p
                    for kind in ("tools", "prompts", "resources", "resource_templates")
                    for p in ds.problems.get(kind, [])
                ],
            }
            if isinstance(ds, Pool):  # per-user: how many identities' processes run now
                out[name]["processes"] = ds.processes
        return out

    # -- the forward (Pipeline's Forwarder) -----------------------------------------------------

    async def forward(self, call: Call) -> None:
        if call.server is not None and call.method == "tools/call":
            return await self._call_tool(call)  # exposure resolved the name: the catalog is not read again
        if call.method.endswith("/list"):
            await self.personal.wake(call)
        catalog = await self.view(call)
        match call.method:
            case "tools/list":
                call.result = types.ListToolsResult(tools=[e.item for e in catalog.tools.values()])
            case "prompts/list":
                call.result = types.ListPromptsResult(prompts=[e.item for e in catalog.prompts.values()])
            case "resources/list":
                call.result = types.ListResourcesResult(resources=catalog.resources)
            case "resources/templates/list":
                call.result = types.ListResourceTemplatesResult(resource_templates=catalog.resource_templates)
            case "tools/call":
                entry = self._resolve(catalog.tools, "tool", call.params["name"])
                call.server, call.tool = entry.server, entry.original
                call.has_output_schema = getattr(entry.item, "output_schema", None) is not None
                await self._call_tool(call)
            case "prompts/get":
                entry = self._resolve(catalog.prompts, "prompt", call.params["name"])
                call.server, call.tool = entry.server, entry.original
                fields = {"name": entry.original, "arguments": call.params.get("arguments")}
                async with self._lease(entry.server, call) as ds:
                    call.result = await self.features.request(ds, f"prompt {entry.original!r}", call, PROMPT, fields)
            case "resources/read":
                await self._read_resource(call, catalog)
            case _:
                prompt = self._resolve_prompt(catalog)
                await self.features.forward(call, Owners(prompt, lambda uri: self.resource_owner(uri, catalog)))

    async def _call_tool(self, call: Call) -> None:
        """The tool call to its resolved `call.server` and `call.tool`."""
        server, tool = call.server, call.tool
        assert server is not None and tool is not None
        if server not in self.downstreams:  # a reload removed it since the name was resolved
            raise UnknownName("tool", call.name, [])

        async def attempt() -> types.CallToolResult | types.InputRequiredResult:
            async with self._lease(server, call) as ds:
                return await self.features.call_tool(ds, tool, call)

        call.result = await signin.signing_in(self.relay, call, attempt)  # the caller may be asked to sign in first

    def _resolve_prompt(self, catalog: Catalog) -> Callable[[str], tuple[str, str]]:
        def owner(name: str) -> tuple[str, str]:
            entry = self._resolve(catalog.prompts, "prompt", name)
            return entry.server, entry.original

        return owner

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Call an exposed tool directly, outside the pipeline (for the gateway's own needs, e.g. version sources)."""
        entry = self._resolve((await self.catalog()).tools, "tool", name)
        ds = self.downstreams[entry.server]
        if isinstance(ds, Pool):  # whose credentials would it use? nobody's
            raise DownstreamUnavailable(entry.server, "per-user", "the gateway's own calls cannot use a user's secrets")
        result = await ds.call_tool(entry.original, arguments)
        if isinstance(result, types.InputRequiredResult):
            raise DownstreamFailed(
                entry.server, f"tool {entry.original!r} asked for input; no client is there to answer."
            )
        return result

    def _lease(self, server: str, call: Call) -> AbstractAsyncContextManager[Downstream]:
        """The downstream that serves this call: the shared one, or for a per-user server the caller's own."""
        return self.features.lease(server, (call.session.identity, call.secrets))

    def _resolve(self, entries: dict[str, Entry], kind: str, name: str) -> Entry:
        entry = entries.get(name)
        if entry is not None:
            return entry
        server = self._merged.unlisted_owner(name) if self._merged is not None and kind == "tool" else None
        ds = None if server is None else self.downstreams.get(server)
        if ds is not None and ds.state in DOWN:  # never came up: that, not a list of other tools, helps
            raise DownstreamUnavailable(ds.name, ds.state.value, ds.last_error)
        suffix = [e for e in entries if e.endswith(f"{self._ns.separator}{name}")]
        closest = suffix or difflib.get_close_matches(name, list(entries), n=3, cutoff=0.5)
        raise UnknownName(kind, name, closest[:3])

    async def _read_resource(self, call: Call, catalog: Catalog) -> None:
        uri: str = call.params["uri"]
        server, original = self.resource_owner(uri, catalog)
        call.server, call.tool = server, original
        async with self._lease(server, call) as ds:
            result = await self.features.request(ds, f"resource {original!r}", call, READ, {"uri": original})
        call.result = result
        if isinstance(result, types.InputRequiredResult):
            return  # the client answers and retries
        exposed = self.uris.exposed(server, original)
        result.contents = [c.model_copy(update={"uri": exposed}) if c.uri == original else c for c in result.contents]

    def resource_owner(self, uri: str, catalog: Catalog) -> tuple[str, str]:
        """(server, original URI) of an exposed resource URI; `UnknownName` with the closest URIs if none owns it."""
        owner = self.uris.owner(uri)
        if owner is None or owner[0] not in self.downstreams:
            known = [r.uri for r in catalog.resources]
            raise UnknownName("resource", uri, difflib.get_close_matches(uri, known, n=3, cutoff=0.5))
        return owner
