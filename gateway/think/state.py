"""Durable run state: one JSON file per run, written atomically, with a version counter against stale writers."""

import fcntl
import json
import os
import re
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import PydanticSerializationError

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


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """An exclusive lock on a workflow's folder, across processes: version check, write and rename are one step."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _sweep(folder: Path, run_id: str) -> None:
    """Remove temp files a killed writer left behind (only called under `_locked`: no live writer owns one)."""
    name = re.compile(re.escape(f".{run_id}.") + r"[A-Za-z0-9_]{8}\.tmp")
    for stale in folder.glob(f".{run_id}.*.tmp"):
        if name.fullmatch(stale.name):
            stale.unlink(missing_ok=True)


class StateStore:
    """`<root>/<workflow>/<run_id>.json`. A file is always whole: written to a temp file, fsynced, renamed.

    Saves of one workflow's runs hold a folder lock (`flock`), so a stale writer in another process gets
    STATE_CONFLICT too; temp files left by a killed writer are removed by the run's next save.
    """

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
        with _locked(path.parent):
            current = self._version_on_disk(path)
            if current != expected_version:
                raise ThinkError(
                    "STATE_CONFLICT",
                    f"run {state.run_id!r} is at version {current}, expected {expected_version}",
                    "Another update landed first: call think.state.get and continue from there.",
                )
            _sweep(path.parent, state.run_id)
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
