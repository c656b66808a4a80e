"""Think as the composition root builds it: the engine from the `think` section, and its in-process servers."""

from collections.abc import Awaitable, Callable
from pathlib import Path

from gateway.config.sections import ThinkConfig
from gateway.downstreams.supervision import Target
from gateway.hosted.prompts import PromptLibrary
from gateway.routing.catalog import Catalog
from gateway.routing.rename import reference
from gateway.store.backends import Stores
from gateway.think import server as think_server
from gateway.think.context import Limits
from gateway.think.engine import Engine
from gateway.think.library import Library
from gateway.think.payloads import Payloads
from gateway.think.state import StateStore
from gateway.think.validator import Schemas
from gateway.think.workflow import DEFAULT_DIR as DEFAULT_WORKFLOWS


class KnownTools:
    """The catalog's tools by reference (`server.tool`: workflows use it whatever the separator clients see),
    built once per catalog (Think asks on every plan and step)."""

    def __init__(self, catalog: Callable[[], Awaitable[Catalog]]) -> None:
        self.catalog = catalog  # the registry's, which is built after the engine (it serves Think's servers)
        self._known: tuple[Catalog | None, frozenset[str]] = (None, frozenset())

    async def __call__(self) -> frozenset[str]:
        catalog = await self.catalog()
        if self._known[0] is not catalog:
            self._known = (catalog, frozenset(reference(e.server, e.original) for e in catalog.tools.values()))
        return self._known[1]


def engine(think: ThinkConfig, stores: Stores, prompts: PromptLibrary, known_tools: KnownTools) -> Engine | None:
    """The engine the `think` section describes (None: Think is disabled)."""
    if not think.enabled:
        return None
    dirs = [Path(d) for d in think.workflows_dirs] if think.workflows_dirs is not None else [DEFAULT_WORKFLOWS]
    return Engine(
        Library(dirs),
        StateStore(stores.runs, stores.spills),
        prompts,
        schemas=Schemas([d / "schemas" for d in dirs]),
        limits=Limits(
            max_snapshot_bytes=think.max_snapshot_bytes,
            max_string_bytes=think.max_string_bytes,
            max_context_bytes=think.max_context_bytes,
            max_context_tasks=think.max_context_tasks,
        ),
        payloads=Payloads(
            mode=think.truncation,
            warn_threshold_bytes=think.warn_threshold_bytes,
            log_sizes=think.log_payload_sizes,
        ),
        known_tools=known_tools,
        slow_call_ms=think.slow_call_ms,
    )


def servers(engine: Engine | None) -> dict[str, Callable[[], Target]]:
    """The `think` and `prompt` in-process servers, by name (none when Think is disabled)."""
    if engine is None:
        return {}
    think, prompt = think_server.build(engine)
    return {"think": lambda: think, "prompt": lambda: prompt}
