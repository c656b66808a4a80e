"""The checked graphs of the workflows, per driver version, and the limits that hold at each step of one."""

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Any

from gateway.hosted.prompts import PromptLibrary
from gateway.think import checks
from gateway.think.context import Limits, capped
from gateway.think.graph import Graph, build, inject_driver
from gateway.think.library import Library
from gateway.think.state import RunState
from gateway.think.templates import Templates
from gateway.think.workflow import Workflow

logger = logging.getLogger(__name__)

KnownTools = Callable[[], Awaitable[frozenset[str]]]
GRAPHS = 256
"""Checked graphs kept (per workflow and driver version), least recently used dropped first."""


class Graphs:
    def __init__(
        self,
        library: Library,
        prompts: PromptLibrary,
        templates: Templates,
        limits: Limits,
        known_tools: KnownTools | None = None,
    ) -> None:
        self.library, self.prompts, self.templates, self.defaults = library, prompts, templates, limits
        self.known_tools = known_tools
        self._graphs: OrderedDict[tuple[str, str, str], tuple[Workflow, frozenset[str] | None, Graph]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._graphs)

    async def get(self, workflow: str, driver_version: str | None = None, pinned: Workflow | None = None) -> Graph:
        """The checked graph of the file as it is now, or of `pinned` (an earlier version a run keeps); rebuilt only
        when the file, the driver version or the tool catalog changed."""
        wf = pinned or self.library.get(workflow)  # the same object while the file is unchanged
        version = driver_version or wf.driver_version or self.prompts.current
        known = frozenset(await self.known_tools()) if self.known_tools is not None else None
        key = (workflow, version, wf.digest)
        cached = self._graphs.get(key)
        if cached is not None and cached[0] is wf and (cached[1] is known or cached[1] == known):
            self._graphs[key] = (wf, known, cached[2])  # the same tools: next time by identity
            self._graphs.move_to_end(key)
            return cached[2]
        graph = build(inject_driver(wf, version), self.templates, known)
        for warning in checks.over_ceiling(wf, self.defaults.max_snapshot_bytes):
            logger.warning("%s: %s: %s", warning["file"], warning["path"], warning["message"])
        self._graphs[key] = (wf, known, graph)
        while len(self._graphs) > GRAPHS:
            self._graphs.popitem(last=False)
        return graph

    def limits(self, graph: Graph, step_id: str | None = None, state: RunState | None = None) -> Limits:
        """Gateway defaults, then the workflow's `limits`, then the step's; the deployment's max_snapshot_bytes is a
        ceiling (seed: "configurable per deployment"): a workflow or step may lower it, never raise it."""
        step_limits: dict[str, Any] = {}
        if step_id is not None and state is not None:
            step_limits = graph.steps[state.steps[step_id].template_of or step_id].limits
        merged = Limits.merged(asdict(self.defaults), graph.workflow.limits, step_limits)
        return capped(merged, self.defaults.max_snapshot_bytes)
