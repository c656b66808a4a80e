"""The runs as one engine sees them: reads that keep the index of ready steps, and writes as one locked step.

A run is named by its owner (`Identity.owner`), workflow and id: the store keeps each owner's runs apart, so
nothing here checks ownership. Every write holds this engine's lock for the run and the backend's lock for it
(`RunRecords.locked`: the local backend's cross-process `flock`) from load to save, so writers on one state
folder take turns instead of failing each other with STATE_CONFLICT; a save that still conflicts (another host
on a shared store, or any writer on Redis) is re-applied to the fresh state, a bounded number of times. Reads
and writes refresh `ready`, which lets Observe tell from memory whether a run waits for a call. A change runs
with the whole values of the run's spilled captures it may read already fetched from the store, and the values it
spilled are written before the state that points at them is saved (`gateway.think.spills`).
"""

import logging
import random
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, TypeVar

import anyio

from gateway.think.errors import ThinkError
from gateway.think.graph import Graph
from gateway.think.ready import ReadyIndex
from gateway.think.spills import RunSpills, parse, spill_name
from gateway.think.state import RunState, StateStore

logger = logging.getLogger(__name__)

T = TypeVar("T")
Change = Callable[[RunState, Graph], tuple[T, bool]]
"""Applied to a run's freshest state: the answer, and whether the state changed (and must be saved)."""
Wants = Callable[[RunState, Graph], Iterable[str]]
"""The step ids whose spilled values a change reads whole (see `spilled`)."""
GraphOf = Callable[[RunState], Awaitable[Graph]]
"""The graph a run follows: of the workflow version it is pinned to."""
ATTEMPTS = 8
"""Saves tried per update when a writer that shares no lock with us (another host on a shared store) interferes."""


def spilled(state: RunState, observations: bool = True) -> list[str]:
    """Step ids of the run's spilled captures (what templates may read) and, unless told not to, observations."""
    ids = [str(rec["step_id"]) for rec in state.captures.values() if rec.get("truncated") and rec.get("file_path")]
    return ids + [sid for sid, seen in state.observed.items() if seen.truncated] if observations else ids


def every_spill(state: RunState, graph: Graph) -> list[str]:
    return spilled(state)


def no_spill(state: RunState, graph: Graph) -> list[str]:
    return []


class Runs:
    def __init__(self, store: StateStore, graph: GraphOf) -> None:
        self.store, self._graph = store, graph
        self.ready = ReadyIndex()
        # A run's lock lives while someone holds or awaits it: nothing accumulates per run ever touched.
        self._locks: weakref.WeakValueDictionary[tuple[str, str, str], anyio.Lock] = weakref.WeakValueDictionary()

    def attach(self, state: RunState) -> RunState:
        """Give a state read or made here its spills, located in this engine's store."""
        folder = self.store.folder(state.owner, state.workflow)
        state.share_spills(RunSpills(partial(self.store.spills.location, folder, state.run_id)))
        return state

    async def whole(self, state: RunState, step_ids: Iterable[str]) -> None:
        """Read the spilled values of `step_ids` not read yet (a missing one is left out: its preview stands)."""
        spills, folder = state.spills, self.store.folder(state.owner, state.workflow)
        for sid in dict.fromkeys(step_ids):
            if sid in spills.values:
                continue
            blob = await self.store.spills.get(folder, state.run_id, spill_name(sid))
            if blob is not None:
                spills.values[sid] = await anyio.to_thread.run_sync(parse, blob)

    async def _flush(self, state: RunState) -> None:
        """Write what the change spilled: before the state that points at it is saved."""
        pending, folder = state.spills.pending, self.store.folder(state.owner, state.workflow)
        while pending:
            name, data = next(iter(pending.items()))
            await self.store.spills.put(folder, state.run_id, name, data)
            del pending[name]

    @asynccontextmanager
    async def held(self, owner: str, workflow: str, run_id: str) -> AsyncIterator[None]:
        """The run to ourselves: first among this engine's tasks, then among the processes sharing its lock."""
        lock = self._locks.setdefault((owner, workflow, run_id), anyio.Lock())
        async with lock, self.store.locked(owner, workflow, run_id):
            yield

    async def load(self, owner: str, workflow: str, run_id: str, *, whole: bool = False) -> RunState:
        """The owner's run as stored (and indexed: Observe answers from what the engine last saw); `whole`: with the
        values of its spilled captures read, for rendering templates. Raises: ThinkError UNKNOWN_RUN."""
        state = self.attach(await self.store.load(owner, workflow, run_id))
        self.ready.index(state)
        if whole:
            await self.whole(state, spilled(state, observations=False))
        return state

    async def latest(self, owner: str, workflow: str) -> RunState:
        """The owner's latest active run of the workflow. Raises: ThinkError UNKNOWN_RUN."""
        latest = await self.store.latest_active(owner, workflow)
        if latest is None:
            raise ThinkError("UNKNOWN_RUN", f"no active run of {workflow!r}", "Start one with think.plan.")
        self.ready.index(latest)
        return self.attach(latest)

    async def update(self, owner: str, workflow: str, run_id: str, change: Change[T], wants: Wants = every_spill) -> T:
        """Apply `change` to the run's freshest state and save it, as one step against every other writer.

        A save that conflicts anyway is re-applied to the reloaded state, up to ATTEMPTS times, so a client never
        sees a STATE_CONFLICT it did not cause. `change` refuses by raising (nothing is saved then). It runs with
        the spilled values `wants` names read whole; what it spills is stored before the state.
        """
        async with self.held(owner, workflow, run_id):
            attempt = 1
            while True:
                state = await self.load(owner, workflow, run_id)
                graph = await self._graph(state)
                await self.whole(state, wants(state, graph))
                answer, changed = change(state, graph)
                if not changed:
                    return answer
                try:
                    await self._flush(state)
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
            await self._flush(state)
            await self.store.save(state, expected_version=0)
        except ThinkError as exc:
            if exc.error_code != "STATE_CONFLICT":
                raise
            return False
        self.ready.index(state)
        return True

    async def clear(self, owner: str, workflow: str, run_id: str) -> None:
        """Delete the owner's run (under its locks, like any write)."""
        async with self.held(owner, workflow, run_id):
            await self.store.delete(owner, workflow, run_id)
            await self.store.spills.drop(self.store.folder(owner, workflow), run_id)
            self.ready.forget(owner, workflow, run_id)

    async def watches(
        self, owner: str, workflow: str, run_id: str, tool: str, arguments: Any, version: int | None = None
    ) -> bool:
        """Whether a ready step of the owner's run calls `tool` with exactly `arguments`: from memory (the run is
        read once if this engine has not seen it yet, or has seen another `version` than the one stored now).
        Raises: ThinkError UNKNOWN_RUN."""
        known = self.ready.waits_for(owner, workflow, run_id, tool, arguments, version)
        if known is None:
            await self.load(owner, workflow, run_id)
            known = self.ready.waits_for(owner, workflow, run_id, tool, arguments)
        return bool(known)
