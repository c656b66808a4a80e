"""Observed step results held in the run state, bounded like reported ones.

The gateway may see a 100 MB tool result for a step. The run state is rewritten (and fsynced) on every
save until `think.next` consumes the observation, so only a preview stays in it: a result over the step's
capture limit (`max_snapshot_bytes`) is spilled whole, gzip-compressed, to the store (`gateway.think.spills`),
and the observation keeps the preview and where the value is. `think.next` reads the whole value back once to validate
and capture it.
"""

import hashlib
import json
import time
from typing import Any

from gateway.think.context import Limits, TaskOutput, full_value, make_output
from gateway.think.measure import json_bytes
from gateway.think.spills import RunSpills
from gateway.think.state import Observation


def bounded(step_id: str, result: Any, limits: Limits, spills: RunSpills) -> Observation:
    """The observation of `result` for `step_id`: whole when it fits the capture limit, else preview + spill.
    Serialized once: the same bytes give the size, the hash (`engine.digest`'s) and the spill."""
    data = json_bytes(result)
    hashed = hashlib.sha256(data).hexdigest()[:16]
    out = make_output(step_id, None, result, limits, spills, source="observed", clock=0, data=data)
    if not out.truncated:
        return Observation(result=result, hash=hashed, bytes=out.original_size, at=time.time())
    return Observation(
        result=out.content,
        hash=hashed,
        bytes=out.original_size,
        at=time.time(),
        truncated=True,
        file_path=out.file_path,
    )


def captured(observation: Observation, step_id: str, key: str, limits: Limits, *, clock: int) -> TaskOutput:
    """The capture of a spilled observation as it is stored: its preview, its spill file (the one `make_output`
    would write for this step), its size."""
    return TaskOutput(
        step_id=step_id,
        capture_as=key,
        content=observation.result,
        original_size=observation.bytes,
        truncated=True,
        strategy=limits.truncation_strategy,
        file_path=observation.file_path,
        source="observed",
        completed_at=clock,
        last_accessed=clock,
    )


def whole(observation: Observation, step_id: str, spills: RunSpills) -> Any:
    """The complete observed value (its spill, read for this change, when the state holds only a preview)."""
    if not observation.truncated:
        return observation.result
    stored = TaskOutput(
        step_id=step_id,
        capture_as=None,
        content=observation.result,
        original_size=observation.bytes,
        truncated=True,
        file_path=observation.file_path,
    )
    return full_value(stored, spills)


def unwrapped(result: Any) -> Any:
    """The value a step records from a tool's result view, JSON carried as text decoded.

    FastMCP servers (mcp-atlassian) declare a `str` return as `{"result": "<JSON text>"}`, and text-only
    tools answer `{"text": "<JSON text>"}`; a workflow's templates and success_schema mean the object inside,
    which is also what a model echoing the result reports. Anything else is kept as it is."""
    if isinstance(result, dict) and len(result) == 1:
        ((key, text),) = result.items()
        if key in ("result", "text") and isinstance(text, str) and text.lstrip().startswith("{"):
            try:
                inner = json.loads(text)
            except ValueError:
                return result
            return inner if isinstance(inner, dict) else result  # only an object: schemas expect one
    return result
