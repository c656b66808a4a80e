"""Composition root: config -> downstreams -> registry -> pipeline -> front."""

import logging
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from mcp.server.subscriptions import ResourceUpdated

from gateway.app import build, thinking
from gateway.app.components import Components, health
from gateway.app.instructions import Instructions
from gateway.app.reload import Reloader
from gateway.app.servers import Servers
from gateway.app.thinking import KnownTools
from gateway.config import GatewayConfig
from gateway.downstreams import secrets as user_secrets
from gateway.downstreams.downstream import Downstream
from gateway.downstreams.grants import Grants
from gateway.downstreams.oauth import OAuth, public_base
from gateway.downstreams.pool import Pool
from gateway.downstreams.supervision import Target
from gateway.errors import GatewayError
from gateway.fronts import eras, tasks_wire
from gateway.fronts.server import Front
from gateway.hosted.prompts import PromptLibrary
from gateway.middleware import Parts, audit, default_chain, policy
from gateway.middleware.exposure import semantic
from gateway.middleware.exposure.expansions import Expansions
from gateway.middleware.exposure.sampling import Sampler
from gateway.middleware.exposure.usage import UsageTally
from gateway.middleware.publish import Publisher
from gateway.middleware.record import Recorder
from gateway.pipeline import Middleware, Pipeline
from gateway.routing.catalog import Catalog, Entry
from gateway.session import ANONYMOUS, Identity, Session, SessionStore, os_user
from gateway.store.backends import open_stores
from gateway.store.cache import SharedCache

logger = logging.getLogger(__name__)


class Gateway:
    """Everything one gateway process runs; `async with gateway.running()` connects, then serve `front.server`."""

    def __init__(
        self,
        config: GatewayConfig,
        *,
        in_process: Mapping[str, Callable[[], Target]] | None = None,
        chain: list[Middleware] | None = None,
        config_path: Path | None = None,
        record: bool = False,
    ) -> None:
        """`config_path`: the file `config` came from; given, the gateway reloads it on change (`app.reload`).
        `record`: keep operation metrics and recent calls for `/metrics` and the page (the HTTP front, `--ui`)."""
        self.config = config
        self._chain = chain
        """A chain given here (benches: `[]`, the front alone) is the whole chain, across reloads too; else
        `default_chain(config, …)`."""
        self.components = Components()
        # Stores and what lives in them. Runs stored before runs had owners were the local user's: stdio's OS user
        # or anonymous HTTP adopts them.
        self.recorder = Recorder() if record else None
        self.cache = SharedCache()
        self.stores = open_stores(config, heirs=frozenset({os_user().owner, ANONYMOUS.owner}))
        self.sessions = SessionStore(shared=self.stores.sessions, clients=self.stores.clients)
        self.outputs = self.stores.outputs
        self.usage = UsageTally(self.stores.usage)
        self.publisher = Publisher.of(self.recorder, self.stores, lambda: self.config.page.redact_keys)
        self.prompts = PromptLibrary()
        self.engine = thinking.engine(config.think, self.stores, self.prompts, KnownTools(self._catalog))
        # Downstreams, and the registry over them: the gateway's own first, then in-process ones, then the config's.
        self.relay = build.relay(config, build.bare_server(config))
        self.oauth = OAuth(lambda: self.config.servers, self.stores.tokens, public_base(config), self.stores.signins)
        self.grants = Grants(lambda: self.config.servers, self.stores.tokens)
        self.servers = Servers(
            self.relay,
            user_secrets.from_config(config.secrets),
            self._max_downstream_bytes,
            self._list_changed,
            self._resource_updated,
            oauth=self.oauth,
            grants=self.grants,
        )
        downstreams: dict[str, Downstream | Pool] = {
            "gateway": build.own_tools(self._status, self.outputs, self.prompts, self._search),
            **build.in_process({**thinking.servers(self.engine), **(in_process or {})}, self._list_changed),
        }
        downstreams.update((name, self.servers(name, server)) for name, server in config.servers.items())
        self.registry = build.registry(config, downstreams, self.cache, self.relay, self._front_changed)
        # What a session sees and may do, then the pipeline and the front over them.
        self.policy = policy.from_config(config.policy)
        self.subjects = policy.Subjects(self.registry.view, self.registry.uris.owner)
        self.exposure = build.exposure(config, self._tool_denial, self._has_workflows)
        # Packs, what clients' models wrote and what use taught (shared).
        self.exposure.index.expansions = Expansions(self.stores.expansions, sampled_store=self.stores.sampled)
        self.sampler = Sampler(self.exposure.index.expansions)
        self.reloader = (
            None
            if config_path is None
            else Reloader(config_path, config, self.registry, self.servers, self._front_changed, self.reconfigure)
        )
        self.instructions = Instructions(self.prompts, thinking=self.engine is not None, config=config)
        self.audit = audit.sink(config.audit)
        self.pipeline = Pipeline(self.registry, self._middlewares(config, self.policy, self.audit))
        self.front = Front(
            self.pipeline,
            self.registry,
            self.sessions,
            instructions=self.instructions.text(config),
            callers=build.callers(config),
            exposure=self.exposure,
            denial=self._denial,
        )
        self.front.freshness.policed = lambda: bool(self.policy)  # read per list: a reload may change the rules
        self.tasks = tasks_wire.runner(self.front, self.stores.tasks, lambda: self.config.limits)
        tasks_wire.install(self.front, self.tasks, after_s=config.limits.task_after_s)

    # -- the links that run back (each resolved when first called, after construction) --------------

    async def _catalog(self) -> Catalog:
        """Think's known tools: the catalog of the registry built after the engine (it serves Think's servers)."""
        return await self.registry.catalog()

    async def _status(self, owner: str | None) -> dict[str, dict[str, Any]]:
        """`gateway.status`: the registry that lists the tool itself, each server that signs people in as the caller
        (`owner`) stands with it."""
        servers = self.registry.status()
        for name in self.oauth.servers.keys() & servers.keys():
            servers[name]["sign_in"] = await self.oauth.standing(name, owner)
            if servers[name]["sign_in"] == "needed":
                servers[name]["state"] = "sign-in needed"  # for this caller: not "idle", which a call would end
        return servers

    def _search(self) -> dict[str, Any]:
        """`gateway.status`'s word on the search: the rankers the exposure's index uses."""
        return semantic.describe(self.exposure.index.rankers)

    def _has_workflows(self) -> bool:
        return self.engine is not None and bool(self.engine.library.names())

    def _max_downstream_bytes(self) -> int:
        return self.config.limits.max_downstream_bytes  # read per connect: a reload may change it

    def _offer(self, catalog: Catalog) -> None:
        """A new catalog: sessions that initialize from now on are told what its servers offer."""
        self.instructions.offered = catalog
        self.front.server.instructions = self.instructions.text(self.config)

    def _middlewares(
        self, config: GatewayConfig, rules: policy.Policy, sink: audit.AuditFile | audit.AuditStream | None
    ) -> list[Middleware]:
        """The pipeline `config` asks for (at start, and again at each reload); a chain given to the constructor
        stays the chain.

        Raises:
            PromptNotFound: `bootstrap.driver_version` names no driver prompt.
        """
        if self._chain is not None:
            return self._chain
        parts = Parts(
            wake=self.registry.personal.wake,
            exposure=self.exposure,
            catalog=self.registry.catalog,
            notify=self._session_tools_changed,
            subjects=self.subjects,
            outputs=self.outputs,
            cache=self.cache,
            prompts=self.prompts,
            call_tool=self.registry.call_tool,
            driver_full_text=self.instructions.driver_full_text(config),
            adapt=eras.adapted,
            engine=self.engine,
            loads=self.stores.loads,
            recorder=self.recorder,
            usage=self.usage,
            sampler=self.sampler,
            sign_ins=self.oauth.needing,
        )
        return default_chain(config, parts, rules, sink)

    def reconfigure(self, config: GatewayConfig) -> Callable[[], Coroutine[Any, Any, None]]:
        """Apply a reloaded config's pipeline sections: calls that start from now on go through a pipeline built
        from `config` (policy, exposure, limits, steering, versions, bootstrap, audit); calls in flight finish on
        theirs. Returns what retires the old pipeline once its calls are done (closing a replaced audit file).

        Raises:
            PromptNotFound, OSError: the new pipeline cannot be built (an unknown driver version, an audit file
                that cannot be opened); nothing was changed.
        """
        rules = policy.from_config(config.policy)
        instructions = self.instructions.text(config)
        sink = self.audit if config.audit == self.config.audit else audit.sink(config.audit)
        try:
            middlewares = self._middlewares(config, rules, sink)
        except Exception:
            if sink is not None and sink is not self.audit:
                sink.close()
            raise
        for name in {n for n, c in config.versions.catalogs.items() if c != self.config.versions.catalogs.get(n)}:
            self.cache.invalidate(f"versions:{name}")  # a changed source is read again, not served from cache
        retired_sink, self.audit, self.policy, self.config = self.audit, sink, rules, config
        self.exposure.reconfigure(config.exposure)
        self.relay.bound_url_asks(config.limits.url_elicitations_per_session, config.limits.url_elicitation_ttl_s)
        self.front.server.instructions = instructions  # for sessions that initialize from now on
        retired = self.pipeline.replace(middlewares)

        async def retire() -> None:
            await retired.calls.idle()
            if retired_sink is not None and retired_sink is not sink:
                retired_sink.close()

        return retire

    def _denial(self, identity: Identity, subject: policy.Subject) -> GatewayError | None:
        # `self.policy` read per call: a reload may bring rules in or take them out.
        return self.policy.denial(identity, subject) if self.policy else None

    def _tool_denial(self, session: Session, entry: Entry) -> GatewayError | None:
        # Every tool call asks: without rules, no subject is built for nothing.
        return self.policy.denial(session.identity, policy.Subject.of(entry)) if self.policy else None

    def _session_tools_changed(self, key: str) -> None:
        self.front.notify.tools_changed(key)

    def _list_changed(self, server: str, kind: str, audience: str | None = None) -> None:
        self.registry.list_changed(server, kind, audience)

    async def _resource_updated(self, server: str, uri: str, audience: str | None = None) -> None:
        """A server's resource changed (`audience`: the identity whose own process of a per-user server it is)."""
        exposed = self.registry.uris.exposed(server, uri)
        await self.relay.updated(exposed, audience)  # handshake-era subscribers
        await self.front.bus.publish_to(ResourceUpdated(uri=exposed), audience)  # 2026-era listen streams

    def _front_changed(self, kind: str, audience: str | None = None) -> None:
        if self.reloader is not None and self.reloader.quiet:
            return  # a reload compares the whole catalog before and after, and tells clients once
        self.front.notify.list_changed(kind, audience)

    def _close_audit(self) -> None:
        if self.audit is not None:  # the one in use at shutdown (a reload may have replaced the first)
            self.audit.close()

    def health(self) -> dict[str, Any]:
        last = None if self.reloader is None or self.reloader.last is None else self.reloader.last.as_dict()
        return health(self.registry.status(), self.components.died, last)

    @asynccontextmanager
    async def running(self) -> AsyncIterator["Gateway"]:
        """Start every downstream concurrently, wait until each is up or has failed once (at most
        `limits.startup_wait_s`), then serve.

        One that fails keeps retrying in the background while the others serve; one still in its
        handshake joins when it comes up (clients hear `list_changed`). Leaving closes all of them
        (and the stdio children's process groups).
        """
        async with AsyncExitStack() as stack:
            tg = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(tg.cancel_scope.cancel)
            stack.callback(self._close_audit)
            stack.push_async_callback(self.stores.aclose)
            await stack.enter_async_context(self.oauth)
            for service in (self.front.notify, self.front.rounds, self.usage, self.tasks, self.sampler):
                await stack.enter_async_context(service.running())  # each owns its task group
            for downstream in self.registry.downstreams.values():
                await stack.enter_async_context(downstream.running())
            with anyio.move_on_after(self.config.limits.startup_wait_s):
                async with anyio.create_task_group() as waiting:
                    for downstream in self.registry.downstreams.values():
                        waiting.start_soon(downstream.settled)
            self.exposure.on_catalog = self._offer
            self._offer(await self.registry.catalog())
            if self.reloader is not None:
                await tg.start(self.components.run, "reloader", self.reloader.run)
            if self.publisher is not None:
                await tg.start(self.components.run, "call log", self.publisher.run)
            states = {name: ds.state.value for name, ds in self.registry.downstreams.items()}
            logger.info("gateway ready: %s", ", ".join(f"{n}={s}" for n, s in states.items()))
            yield self
