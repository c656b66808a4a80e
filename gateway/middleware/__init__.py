"""The pipeline, whole and in order: `default_chain` returns every middleware a call passes through; the list
order is the hook order (see `gateway.pipeline`). Nothing else inserts into it or appends to it.

| # | middleware | what it does |
|---|---|---|
| 1 | wake | starts the caller's own process of a per-user server before its tools are listed or called |
| 2 | exposure | what the session is listed, find_tools, call_tool unwrapped; applies the policy to tools |
| 3 | policy | applies the policy to prompts, resources, templates, completion and subscriptions |
| 4 | versions | live version checks of `name@version` tokens |
| 5 | observe | records a Think step's real result and says how to go on |
| 6 | bootstrap | the driver prompt on a session's first result |
| 7 | steering | hints: configured rules and the built-in ones after errors and truncation |
| 8 | size_guard | oversized requests refused, oversized results spilled and previewed (after every text is added) |
| 9 | render | the answer as the client receives it: names, relay notices, hints, the client's version |
| 10 | audit | one line per call (it sees every other decision, and the answer rendered) |
| 11 | record | MCP operation durations for `/metrics`, recent calls for the page (only when served: HTTP, `--ui`) |
"""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from gateway.config import GatewayConfig
from gateway.hosted.prompts import PromptLibrary
from gateway.middleware import audit, policy
from gateway.middleware.bootstrap import Bootstrap
from gateway.middleware.exposure.hook import ExposureMiddleware, SignIns
from gateway.middleware.exposure.sampling import Sampler
from gateway.middleware.exposure.usage import UsageTally
from gateway.middleware.exposure.view import Exposure
from gateway.middleware.limits import SizeLimits
from gateway.middleware.observe import Observe
from gateway.middleware.record import Recorder
from gateway.middleware.render import Adapt, Render
from gateway.middleware.size_guard import SizeGuard
from gateway.middleware.steering import Steering
from gateway.middleware.versions import VersionChecks
from gateway.middleware.wake import Wake, WakePools
from gateway.pipeline import Middleware
from gateway.routing.catalog import Catalog
from gateway.sdk import CallTool
from gateway.store.base import Outputs, SharedLoads
from gateway.store.cache import SharedCache
from gateway.think.engine import Engine


@dataclass(frozen=True, slots=True)
class Parts:
    """The running gateway's pieces the middlewares are built from (the config gives the rest)."""

    wake: Wake
    exposure: Exposure
    catalog: Callable[[], Awaitable[Catalog]]
    notify: Callable[[str], None]
    """Tells one session (by key) that its tool list changed."""
    subjects: policy.Subjects
    """What a request names, for the policy of what servers offer besides tools."""
    outputs: Outputs
    cache: SharedCache
    prompts: PromptLibrary
    call_tool: CallTool
    driver_full_text: str
    adapt: Adapt
    """A result as the client's protocol version defines it (`gateway.fronts.eras.adapted`)."""
    engine: Engine | None = None
    loads: SharedLoads | None = None
    recorder: Recorder | None = None
    """Kept across reloads (its buffer and counts outlive a pipeline); None where nothing reads it."""
    usage: UsageTally | None = None
    """Each identity's tool calls, counted for `auto`'s fill order (kept across reloads, as the store is)."""
    sampler: Sampler | None = None
    """Asks clients' models for tools' expansions (kept across reloads: what it asked is asked once)."""
    sign_ins: SignIns | None = None
    """Which of some servers a person (owner digest) must sign in to first (`OAuth.needing`)."""


def default_chain(
    config: GatewayConfig, parts: Parts, rules: policy.Policy, sink: audit.AuditFile | audit.AuditStream | None
) -> list[Middleware]:
    """wake → exposure → policy → versions → observe → bootstrap → steering → size_guard → render → audit → record.

    Middlewares a config leaves nothing to do for are left out (no policy rules, Think off, no audit sink).

    Raises:
        PromptNotFound: `bootstrap.driver_version` names no driver prompt.
    """
    limits = SizeLimits.from_config(config)
    exposure = ExposureMiddleware(
        parts.exposure,
        parts.catalog,
        notify=parts.notify,
        answer_budget=config.limits.max_inline_bytes,
        usage=parts.usage,
        sampler=parts.sampler,
        sign_ins=parts.sign_ins,
    )
    optional: list[Middleware | None] = [
        WakePools(parts.wake),
        exposure,  # before the rest: they see the registry's name of a direct call, gateway.call_tool unwrapped
        policy.PolicyCheck(rules, parts.subjects) if rules else None,  # a refused request goes no further
        VersionChecks.from_config(config, cache=parts.cache, call_tool=parts.call_tool, loads=parts.loads),
        None if parts.engine is None else Observe.from_config(config, engine=parts.engine),
        Bootstrap.from_config(config, prompts=parts.prompts, full_text=parts.driver_full_text),
        Steering.from_config(config, limits=limits),
        SizeGuard.from_config(config, outputs=parts.outputs, limits=limits, on_spill=exposure.spilled),
        # The last stage that changes the answer: the observers after it see what the client received.
        Render(hint_budget=config.limits.hint_budget_chars, adapt=parts.adapt),
        None if sink is None else audit.Audit(sink),
        parts.recorder,
    ]
    return [m for m in optional if m is not None]
