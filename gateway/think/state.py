"""Durable run state: one JSON file per run, written atomically, with a version counter against stale writers."""

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gateway.think.errors import ThinkError
from gateway.think.workflow import check_name

StepStatus = Literal["pending", "done", "skipped", "expanded"]


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
    """Why a step was skipped (its `when`)."""
    completed_at: int | None = None


class Observation(_Model):
    result: Any
    hash: str
    bytes: int
    at: float


class Checkpoint(_Model):
    name: str
    version: int
    steps: dict[str, StepState]
    captures: dict[str, Any]


class HistoryEntry(_Model):
    at: float
    event: str
    step_id: str | None = None
    bytes: int | None = None
    detail: str | None = None


class RunState(_Model):
    workflow: str
    run_id: str
    version: int = 0
    status: Literal["active", "done"] = "active"
    created: float = Field(default_factory=time.time)
    updated: float = Field(default_factory=time.time)
    params: dict[str, Any] = {}
    driver: dict[str, str] = {}
    """Version and hash of the driver prompt the run was planned with."""
    steps: dict[str, StepState] = {}
    """In workflow order (foreach children right after their parent)."""
    captures: dict[str, Any] = {}
    """capture name -> TaskOutput record (see `gateway.think.context`)."""
    observed: dict[str, Observation] = {}
    """step id -> the real result the gateway saw the client get for that step's call."""
    checkpoints: list[Checkpoint] = []
    history: list[HistoryEntry] = []
    clock: int = 0
    """Logical time: increases on every completed step (ordering, recency, LRU)."""

    def log(self, event: str, step_id: str | None = None, size: int | None = None, detail: str | None = None) -> None:
        self.history.append(HistoryEntry(at=time.time(), event=event, step_id=step_id, bytes=size, detail=detail))


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class StateStore:
    """`<root>/<workflow>/<run_id>.json`. A file is always whole: written to a temp file, fsynced, renamed."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, workflow: str, run_id: str) -> Path:
        return self.root / check_name("workflow", workflow) / f"{check_name('run', run_id)}.json"

    def exists(self, workflow: str, run_id: str) -> bool:
        return self.path(workflow, run_id).exists()

    def load(self, workflow: str, run_id: str) -> RunState:
        """Raises: ThinkError UNKNOWN_RUN (missing or unreadable file)."""
        path = self.path(workflow, run_id)
        try:
            return RunState.model_validate_json(path.read_bytes())
        except FileNotFoundError:
            raise ThinkError(
                "UNKNOWN_RUN",
                f"no run {run_id!r} of workflow {workflow!r}",
                "Call think.state.list to see the runs, or think.plan to start one.",
            ) from None
        except ValidationError as exc:
            raise ThinkError(
                "UNKNOWN_RUN",
                f"run file {path} is unreadable ({exc.error_count()} problems)",
                "Start a new run with think.plan.",
            ) from None

    def save(self, state: RunState, expected_version: int) -> RunState:
        """Write `state` as version `expected_version + 1`.

        Raises:
            ThinkError: STATE_CONFLICT when the file on disk is no longer at `expected_version`.
        """
        path = self.path(state.workflow, state.run_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        current = self._version_on_disk(path)
        if current != expected_version:
            raise ThinkError(
                "STATE_CONFLICT",
                f"run {state.run_id!r} is at version {current}, expected {expected_version}",
                "Another update landed first: call think.state.get and continue from there.",
            )
        state.version = expected_version + 1
        state.updated = time.time()
        data = state.model_dump_json().encode()
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{state.run_id}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        _fsync_dir(path.parent)
        return state

    @staticmethod
    def _version_on_disk(path: Path) -> int:
        try:
            raw = json.loads(path.read_bytes())
        except FileNotFoundError:
            return 0
        version: int = raw.get("version", 0)
        return version

    def runs(self, workflow: str) -> list[RunState]:
        """All readable runs of a workflow, newest first."""
        folder = self.root / check_name("workflow", workflow)
        out: list[RunState] = []
        for path in folder.glob("*.json") if folder.is_dir() else []:
            try:
                out.append(RunState.model_validate_json(path.read_bytes()))
            except (OSError, ValidationError):
                continue
        return sorted(out, key=lambda s: (s.updated, s.run_id), reverse=True)

    def latest_active(self, workflow: str) -> RunState | None:
        return next((s for s in self.runs(workflow) if s.status == "active"), None)

    def delete(self, workflow: str, run_id: str) -> None:
        self.path(workflow, run_id).unlink(missing_ok=True)


def snapshot_of(state: RunState) -> dict[str, Any]:
    """What `think.state.get` shows (checkpoints and observations summarized, not dumped)."""
    body = state.model_dump(exclude={"checkpoints", "observed", "history"})
    body["checkpoints"] = [c.name for c in state.checkpoints]
    body["observed"] = {k: {"hash": o.hash, "bytes": o.bytes} for k, o in state.observed.items()}
    body["history"] = [h.model_dump(exclude_none=True) for h in state.history[-20:]]
    return body
