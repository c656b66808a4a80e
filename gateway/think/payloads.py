"""Seed 000's payload discipline at `think.next`: each reported snapshot measured, logged and counted in a size
histogram, truncated (or rejected) past the cap, and the model told when it is near or over it."""

import logging
from typing import Any, Literal

from opentelemetry.metrics import Meter

from gateway import telemetry
from gateway.think import snapshot
from gateway.think.context import Limits
from gateway.think.state import RunState

logger = logging.getLogger(__name__)


class Payloads:
    def __init__(
        self,
        *,
        mode: Literal["truncate", "reject"] = "truncate",
        warn_threshold_bytes: int = 40_000,
        log_sizes: bool = True,
        meter: Meter = telemetry.meter,
    ) -> None:
        self.mode, self.warn_threshold_bytes, self.log_sizes = mode, warn_threshold_bytes, log_sizes
        self.sizes = meter.create_histogram(
            "think.snapshot.size", unit="By", description="Compact-JSON bytes of think.next result snapshots"
        )

    def guard(self, state: RunState, step_id: str, value: Any, limits: Limits) -> tuple[Any, str | None]:
        """`(value to record, hint for the model or None)`. Raises: ThinkError PAYLOAD_TOO_LARGE in reject mode."""
        limit = limits.max_snapshot_bytes
        used, info = snapshot.guard(
            value, step_id=step_id, max_bytes=limit, max_string_bytes=limits.max_string_bytes, mode=self.mode
        )
        size, truncated = info["original_bytes"], info["truncated"]
        self.sizes.record(size, {"think.workflow": state.workflow, "think.truncated": truncated})
        state.log("snapshot", step_id, size, "truncated" if truncated else None)
        telemetry.event("think.snapshot", **{"think.step_id": step_id, **info})
        where = f"think.next {state.workflow}/{state.run_id} {step_id}"
        if truncated:
            logger.warning(
                "%s: snapshot truncated from %d to %d bytes (limit %d)", where, size, info["final_bytes"], limit
            )
            return used, (
                f"result_snapshot was {size} bytes, over the {limit}-byte limit: it was recorded truncated (the "
                "largest values cut, every key kept). Keep snapshots compact: summaries, counts, file:line references."
            )
        if self.log_sizes:
            logger.info("%s: result_snapshot %d bytes (limit %d)", where, size, limit)
        if size > self.warn_threshold_bytes:
            logger.warning(
                "%s: snapshot of %d bytes is over the warning threshold %d", where, size, self.warn_threshold_bytes
            )
            return used, (
                f"result_snapshot was {size} bytes, over the {self.warn_threshold_bytes}-byte warning threshold (the "
                f"limit is {limit}): send summaries, counts and file:line references instead of full contents."
            )
        return used, None
