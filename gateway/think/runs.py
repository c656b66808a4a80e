"""The runs as one engine sees them: reads that keep the index of ready steps, and writes as one locked step.

Every write holds this engine's lock for the run and the run's cross-process lock (`runlock`) from load to
save, so writers on one state folder take turns instead of failing each other with STATE_CONFLICT; a save
that still conflicts (another host on a shared store) is re-applied to the fresh state, a bounded number of
times. Reads and writes refresh `ready`, which lets Observe tell from memory whether a run waits for a call.
"""

import logging
import random
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio

from gateway.think import runlock
from gateway.think.errors import ThinkError
from gateway.think.graph import Graph
from gateway.think.ready import ReadyIndex
from gateway.think.state import RunState, StateStore
from gateway.think.workflow import check_name

logger = logging.getLogger(__name__)

T = TypeVar("T")
Change = Callable[[RunState, Graph], tuple[T, bool]]
"""Applied to a run's freshest state: the answer, and whether the state changed (and must be saved)."""
GraphOf = Callable[[str, str | None], Awaitable[Graph]]
ATTEMPTS = 8
"""Saves tried per update when a writer that shares no lock with us (another host on a shared store) interferes."""
FILES = ".files"
"""A run's own folder (spilled captures, its lock) is `<workflow>/<run_id>.files`: no run's `<run_id>.json` can be
named that, whatever its id (a folder named after the id alone collided with run `<id>.json`'s state file)."""


class Runs:
    def __init__(self, store: StateStore, graph: GraphOf) -> None:
        self.store, self._graph = store, graph
        self.ready = ReadyIndex()
        # A run's lock lives while someone holds or awaits it: nothing accumulates per run ever touched.
        self._locks: weakref.WeakValueDictionary[tuple[str, str], anyio.Lock] = weakref.WeakValueDictionary()

    def files(self, workflow: str, run_id: str) -> Path:
        """The run's own folder: `<state root>/<workflow>/<run_id>.files`."""
        return self.store.root / check_name("workflow", workflow) / f"{check_name('run', run_id)}{FILES}"

    @asynccontextmanager
    async def held(self, workflow: str, run_id: str) -> AsyncIterator[None]:
        """The run to ourselves: first among this engine's tasks, then among every process on the state folder."""
        async with self._locks.setdefault((workflow, run_id), anyio.Lock()), runlock.held(self.files(workflow, run_id)):
            yield

    async def load(self, workflow: str, run_id: str) -> RunState:
        """The run as stored (and indexed: Observe answers from what the engine last saw)."""
        state = await self.store.load(workflow, run_id)
        self.ready.index(state)
        return state

    async def latest(self, workflow: str) -> RunState:
        """The workflow's latest active run. Raises: ThinkError UNKNOWN_RUN."""
        latest = await self.store.latest_active(check_name("workflow", workflow))
        if latest is None:
            raise ThinkError("UNKNOWN_RUN", f"no active run of {workflow!r}", "Start one with think.plan.")
        self.ready.index(latest)
        return latest

    async def update(self, workflow: str, run_id: str, change: Change[T]) -> T:
        """Apply `change` to the run's freshest state and save it, as one step against every other writer.

        A save that conflicts anyway is re-applied to the reloaded state, up to ATTEMPTS times, so a client never
        sees a STATE_CONFLICT it did not cause. `change` refuses by raising (nothing is saved then).
        """
        async with self.held(workflow, run_id):
            attempt = 1
            while True:
                state = await self.load(workflow, run_id)
                answer, changed = change(state, await self._graph(workflow, state.driver.get("version")))
                if not changed:
                    return answer
                try:
                    await self.store.save(state, expected_version=state.version)
                except ThinkError as exc:
                    if exc.error_code != "STATE_CONFLICT" or attempt == ATTEMPTS:
                        raise
                    logger.info("run %s/%s: saved elsewhere meanwhile, re-applying (%d)", workflow, run_id, attempt)
                    await anyio.sleep(random.uniform(0, 0.002 * attempt))  # let the other writer finish first
                    attempt += 1
                    continue
                self.ready.index(state)
                return answer

    async def create(self, state: RunState) -> bool:
        """Save a new run (the caller holds it); False when a writer sharing no lock with us created it first."""
        try:
            await self.store.save(state, expected_version=0)
        except ThinkError as exc:
            if exc.error_code != "STATE_CONFLICT":
                raise
            return False
        self.ready.index(state)
        return True

    async def clear(self, workflow: str, run_id: str) -> None:
        """Delete the run (under its locks, like any write)."""
        async with self.held(workflow, run_id):
            await self.store.delete(workflow, run_id)
            self.ready.forget(workflow, run_id)

    async def watches(self, workflow: str, run_id: str, tool: str, arguments: Any) -> bool:
        """Whether a ready step of the run calls `tool` with exactly `arguments`: from memory (the run is read
        once if this engine has not seen it yet). Raises: ThinkError UNKNOWN_RUN."""
        known = self.ready.waits_for(workflow, run_id, tool, arguments)
        if known is None:
            await self.load(workflow, run_id)
            known = self.ready.waits_for(workflow, run_id, tool, arguments)
        return bool(known)
