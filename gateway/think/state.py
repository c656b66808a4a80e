"""Durable run state: the run models, and `StateStore` (async, off the event loop) over a store backend."""

import json
import time
from contextlib import AbstractAsyncContextManager
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError
from pydantic_core import PydanticSerializationError

from gateway.store.base import RunRecords, Spills, VersionConflict, owned
from gateway.think.errors import ThinkError
from gateway.think.format import check_name
from gateway.think.spills import RunSpills

StepStatus = Literal["pending", "done", "skipped", "expanded", "failed"]
LATEST = "~latest"
"""The record naming a folder's latest active run (no run id contains `~`: `check_name`)."""
LATEST_FIELD = "latest_active"
"""Its field: a key no run state has, so listing a folder's runs skips the pointer as unreadable."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StepState(_Model):
    status: StepStatus = "pending"
    call: str
    deps: list[str] = []
    template_of: str | None = None
    """The workflow step this one comes from (itself, or the parent of a foreach expansion)."""
    item: Any = None
    index: int | None = None
    input: Any = None
    """The rendered input, fixed when the step was first instructed (the observe middleware matches on it)."""
    result_hash: str | None = None
    source: Literal["observed", "reported"] | None = None
    reason: str | None = None
    """Why a step was skipped (its `when`, or the failed step named in `blocked_by`)."""
    completed_at: int | None = None
    attempts: int = 0
    """Failed attempts so far (`retry`); `error` is the last one's, `not_before` when the next may be made."""
    error: str | None = None
    not_before: float | None = None
    blocked_by: str | None = None


class Observation(_Model):
    result: Any
    """The whole result, or its preview when `truncated` (the whole value is then in `file_path`)."""
    hash: str
    bytes: int
    at: float
    truncated: bool = False
    file_path: str | None = None


class Checkpoint(_Model):
    """Where the run stood after a step: statuses and capture names only (captures are only ever added,
    so a copy of their contents per checkpoint would make the state file grow quadratically)."""

    name: str
    version: int
    statuses: dict[str, StepStatus]
    capture_keys: list[str]


class HistoryEntry(_Model):
    at: float
    event: str
    step_id: str | None = None
    bytes: int | None = None
    detail: str | None = None


class RunState(_Model):
    owner: str = Field(default="", exclude=True)
    """Whose run (`Identity.owner`): given by where it is stored (`StateStore`), never written into the record."""
    workflow: str
    run_id: str
    version: int = 0
    status: Literal["active", "done", "failed"] = "active"
    created: float = Field(default_factory=time.time)
    updated: float = Field(default_factory=time.time)
    params: dict[str, Any] = {}
    workflow_hash: str = ""
    """The content hash of the workflow file the run was planned with (its text is in the spill `~workflow`):
    the run follows that version until migrated (think.reset migrate); "" for runs from before pinning."""
    driver: dict[str, str] = {}
    """Version and hash of the driver prompt the run was planned with."""
    steps: dict[str, StepState] = {}
    """In workflow order (foreach children right after their parent)."""
    captures: dict[str, Any] = {}
    """capture name -> TaskOutput record (see `gateway.think.context`)."""
    observed: dict[str, Observation] = {}
    """step id -> the real result the gateway saw the client get for that step's call."""
    checkpoints: list[Checkpoint] = []
    """The newest checkpoints; older ones are in the spill store (`checkpoint_chunks`, see `retention`)."""
    checkpoint_chunks: int = 0
    """Chunks of older checkpoints spilled: `~checkpoints.0` holds the oldest."""
    history: list[HistoryEntry] = []
    clock: int = 0
    """Logical time: increases on every completed step (ordering, recency, LRU)."""
    _spills: RunSpills = PrivateAttr(default_factory=RunSpills)

    @property
    def spills(self) -> RunSpills:
        """Whole values of the run's spilled captures as far as read, and new spills (not part of the record)."""
        return self._spills

    def share_spills(self, spills: RunSpills) -> None:
        self._spills = spills

    def log(self, event: str, step_id: str | None = None, size: int | None = None, detail: str | None = None) -> None:
        self.history.append(HistoryEntry(at=time.time(), event=event, step_id=step_id, bytes=size, detail=detail))


class StateStore:
    """Run states by `(owner, workflow, run_id)`, one JSON document each, with a version counter against stale writers.

    The records live in a backend (`gateway.store`, opened by the composition root): files (`<folder>/<run_id>.json`,
    written atomically in a worker thread), or Redis shared by replicas. Either way `save` is a compare-and-set
    atomic across processes: a stale writer gets STATE_CONFLICT. Spilled captures go to `spills`, the same way.
    Every key of a run is under its owner's folder (`folder`), so another identity's run is one that does not exist.
    """

    def __init__(self, records: RunRecords, spills: Spills) -> None:
        self.records = records
        self.spills = spills
        self._latest: dict[str, str] = {}
        """The run each folder's pointer names, as this process last wrote or read it (bounded by the folders)."""

    @staticmethod
    def folder(owner: str, workflow: str) -> str:
        """Where an owner's runs of a workflow are kept, on every backend (records, spills, lock)."""
        return owned(owner, check_name("workflow", workflow))

    def locked(self, owner: str, workflow: str, run_id: str) -> AbstractAsyncContextManager[None]:
        """The run to this process among those sharing the backend's lock (see `RunRecords.locked`)."""
        return self.records.locked(self.folder(owner, workflow), check_name("run", run_id))

    async def exists(self, owner: str, workflow: str, run_id: str) -> bool:
        return await self.records.get(self.folder(owner, workflow), check_name("run", run_id)) is not None

    async def load(self, owner: str, workflow: str, run_id: str) -> RunState:
        """Raises: ThinkError UNKNOWN_RUN (missing, unreadable, or another owner's: one answer); StoreUnavailable."""
        data = await self.records.get(self.folder(owner, workflow), check_name("run", run_id))
        if data is None:
            raise ThinkError(
                "UNKNOWN_RUN",
                f"no run {run_id!r} of workflow {workflow!r}",
                "Call think.state.list to see the runs, or think.plan to start one.",
            )
        try:
            state = RunState.model_validate_json(data)
        except ValidationError as exc:
            raise ThinkError(
                "UNKNOWN_RUN",
                f"run {workflow}/{run_id} in {self.records.where} is unreadable ({exc.error_count()} problems)",
                "Start a new run with think.plan.",
            ) from None
        state.owner = owner
        return state

    async def save(self, state: RunState, expected_version: int) -> RunState:
        """Write `state` (its owner's) as version `expected_version + 1`.

        Raises:
            ThinkError: STATE_CONFLICT when the stored run is no longer at `expected_version`;
                PAYLOAD_TOO_LARGE when the state cannot be serialized. Nothing is written then.
            StoreUnavailable: the backend cannot be reached (nothing is written either).
        """
        folder, run_id = self.folder(state.owner, state.workflow), check_name("run", state.run_id)
        state.version = expected_version + 1
        state.updated = time.time()
        try:
            data = state.model_dump_json().encode()
        except PydanticSerializationError:
            # A value nested past pydantic_core's ~255 levels (the file nests a capture ~6 levels below the
            # snapshot): a clear error the model can act on instead of an internal one; nothing is written.
            state.version = expected_version
            raise ThinkError(
                "PAYLOAD_TOO_LARGE",
                f"run {state.run_id!r} cannot be saved: a result in it is nested too deeply to store",
                "Send a flatter result_snapshot: a summary, or a file path instead of the structure.",
            ) from None
        try:
            await self.records.put(folder, run_id, data, expected_version)
        except VersionConflict as exc:
            state.version = expected_version
            raise ThinkError(
                "STATE_CONFLICT",
                f"run {state.run_id!r} is at version {exc.current}, expected {expected_version}",
                "Another update landed first: call think.state.get and continue from there.",
            ) from None
        except BaseException:
            state.version = expected_version
            raise
        if state.status == "active" and self._latest.get(folder) != run_id:
            await self._point(folder, run_id)
        return state

    async def _point(self, folder: str, run_id: str) -> None:
        """Name `run_id` as the folder's latest active run: written only when it changes, so a run advancing step
        by step costs no extra write. A hint: a lost race leaves another fresh run named, and a run that ended or
        went makes the reader scan."""
        data = await self.records.get(folder, LATEST)
        version = 0 if data is None else int(json.loads(data).get("version", 0))
        pointer = json.dumps({"version": version + 1, LATEST_FIELD: run_id}).encode()
        try:
            await self.records.put(folder, LATEST, pointer, version)
        except VersionConflict:
            return  # another writer named its run just now: as fresh as ours
        self._latest[folder] = run_id

    async def runs(self, owner: str, workflow: str) -> list[RunState]:
        """All readable runs of a workflow that are the owner's, newest first."""
        out: list[RunState] = []
        for data in await self.records.all(self.folder(owner, workflow)):
            try:
                state = RunState.model_validate_json(data)
            except ValidationError:
                continue
            state.owner = owner
            out.append(state)
        return sorted(out, key=lambda s: (s.updated, s.run_id), reverse=True)

    async def latest_active(self, owner: str, workflow: str) -> RunState | None:
        """The owner's most recently saved active run: the one the folder's pointer names (one read), else (it
        ended, went, or no pointer yet) the newest active one of all its runs."""
        folder = self.folder(owner, workflow)
        data = await self.records.get(folder, LATEST)
        if data is not None:
            named = json.loads(data).get(LATEST_FIELD)
            try:
                state = await self.load(owner, workflow, named) if isinstance(named, str) else None
            except ThinkError:
                state = None
            if state is not None and state.status == "active":
                return state
        return next((s for s in await self.runs(owner, workflow) if s.status == "active"), None)

    async def delete(self, owner: str, workflow: str, run_id: str) -> None:
        await self.records.delete(self.folder(owner, workflow), check_name("run", run_id))
