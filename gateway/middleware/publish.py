"""Publish: the recorder's calls and counts into the call log (`gateway.store.base.CallLog`), as the page shows
them, off every call's path.

The recorder keeps references only; this turns them into plain data (the result as the client received it,
texts cut for the page, the wall-clock time) when someone looks (`flush` before a read), and on Redis also in
the background about once a second after calls came, so other replicas see them. Counts are put with each flush.
"""

import itertools
import logging
import secrets
import time
from typing import Any

import anyio
import mcp.types as types

from gateway.errors import GatewayError
from gateway.middleware.record import Recorded, Recorder
from gateway.results import HINTS_META_KEY
from gateway.store.backends import Stores
from gateway.store.base import CallLog
from gateway.telemetry.operations import Histogram, shortened
from gateway.telemetry.repeats import Repeating

logger = logging.getLogger(__name__)
_warn = Repeating(logger)
TEXT_SHOWN = 20_000
"""Characters of a result kept for the page (the rest is said to be cut)."""


def _text(result: types.CallToolResult) -> str:
    parts = [b.text if isinstance(b, types.TextContent) else f"[{b.type} block]" for b in result.content]
    if result.structured_content is not None and not parts:
        parts.append(str(result.structured_content))
    text = "\n\n".join(parts)
    return text if len(text) <= TEXT_SHOWN else text[:TEXT_SHOWN] + f"\n… ({len(text) - TEXT_SHOWN:,} more characters)"


def _before_note(c: Recorded, original: types.CallToolResult | None) -> str:
    if c.spilled is not None:
        return f"Spilled whole to the output store as {c.spilled}; the client got a preview and how to read it."
    if original is None:
        return "Answered by the gateway itself: nothing was forwarded." if c.error is None else "Refused: not sent."
    return "As the server answered it."


def entry(c: Recorded, ref: str, wall: float) -> dict[str, Any]:
    """One call as the page shows it: metadata, the server's answer beside what the client received."""
    received = c.result  # as the client received it: rendered in the chain (`gateway.middleware.render`)
    original = c.downstream if isinstance(c.downstream, types.CallToolResult) else None
    notes = (received.meta or {}).get(HINTS_META_KEY, []) if received is not None else []
    return {
        "ref": ref,
        "at": wall,
        "identity": c.identity.name,
        "tool": shortened(c.tool),  # a caller's name of a million characters is not kept whole
        "server": c.server,
        "outcome": c.outcome,
        "seconds": c.seconds,
        "request_bytes": c.request_bytes,
        "response_bytes": c.response_bytes,
        "spilled": c.spilled,
        "hints": [hint.kind for hint in c.hints],
        "trace_id": c.trace_id,
        "error": None if c.error is None else str(c.error),
        "before": None if original is None else _text(original),
        "before_note": _before_note(c, original),
        "after": None if received is None else _text(received),
        "gateway_text": [{"kind": n.get("kind"), "text": n.get("text")} for n in notes if isinstance(n, dict)],
    }


def snapshot(histogram: Histogram) -> list[list[Any]]:
    return [[list(key), list(s.buckets), s.total, s.count] for key, s in histogram.series.items()]


class Publisher:
    def __init__(
        self,
        recorder: Recorder,
        log: CallLog,
        *,
        background: bool,
        every_s: float = 1.0,
    ) -> None:
        self.recorder = recorder
        self.log = log
        self.background = background
        """Publish without being asked (Redis: for the other replicas)."""
        self.every_s = every_s
        self.replica = secrets.token_hex(4)
        self._lock = anyio.Lock()
        self._counted = -1
        self._numbers = itertools.count(1)

    @classmethod
    def of(cls, recorder: Recorder | None, stores: Stores) -> "Publisher | None":
        """The publisher of a recording gateway (None: it does not record); in the background on Redis."""
        if recorder is None:
            return None
        return cls(recorder, stores.calls, background=stores.redis is not None)

    async def flush(self) -> None:
        """Move every recorded call into the log, and put the counts if they changed (raises StoreUnavailable)."""
        async with self._lock:
            calls = self.recorder.drain()
            if calls:
                now, clock = time.time(), time.perf_counter()
                refs = [f"{self.replica}-{next(self._numbers)}" for _ in calls]
                entries = [entry(c, ref, now - (clock - c.ended)) for c, ref in zip(calls, refs, strict=True)]
                await self.log.add([(c.identity.owner, e) for c, e in zip(calls, entries, strict=True)])
            operations = self.recorder.operations
            counted = sum(s.count for s in operations.server.series.values())
            if counted != self._counted:
                counts = {"server": snapshot(operations.server), "client": snapshot(operations.client)}
                await self.log.put_counts(self.replica, counts)
                self._counted = counted

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """On Redis: publish about `every_s` after calls came (the recorder wakes this once per batch), and the
        counts at least every minute so other replicas know this one is alive. Elsewhere: nothing to do."""
        task_status.started()
        if not self.background:
            return
        while True:
            with anyio.move_on_after(60) as idle:
                await self.recorder.arrival().wait()
            if idle.cancelled_caught:
                self._counted = -1  # no calls for a minute: the same counts again, to say this replica is alive
            else:
                await anyio.sleep(self.every_s)  # gather the calls of a burst into one round trip
            try:
                await self.flush()
            except GatewayError as exc:
                _warn.warning("call log: could not publish the recent calls (%s); the page lacks them", exc)
