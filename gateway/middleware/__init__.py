"""The default response pipeline; the list order is the hook order (see `gateway.pipeline`)."""

from gateway.config import GatewayConfig
from gateway.hosted.prompts import PromptLibrary
from gateway.middleware.bootstrap import Bootstrap
from gateway.middleware.limits import SizeLimits
from gateway.middleware.observe import Observe
from gateway.middleware.size_guard import SizeGuard
from gateway.middleware.steering import Steering
from gateway.middleware.versions import VersionChecks
from gateway.pipeline import Middleware
from gateway.store.base import Outputs, SharedLoads
from gateway.store.cache import SharedCache
from gateway.think.engine import Engine
from gateway.types import CallTool


def default_chain(
    config: GatewayConfig,
    *,
    outputs: Outputs,
    cache: SharedCache,
    prompts: PromptLibrary,
    call_tool: CallTool,
    driver_full_text: str,
    engine: Engine | None = None,
    loads: SharedLoads | None = None,
) -> list[Middleware]:
    """versions → observe → bootstrap → steering → size_guard (last: it measures what the others produced)."""
    limits = SizeLimits.from_config(config)
    return [
        VersionChecks.from_config(config, cache=cache, call_tool=call_tool, loads=loads),
        *([] if engine is None else [Observe.from_config(config, engine=engine)]),
        Bootstrap.from_config(config, prompts=prompts, full_text=driver_full_text),
        Steering.from_config(config, limits=limits),
        SizeGuard.from_config(config, outputs=outputs, limits=limits),
    ]
