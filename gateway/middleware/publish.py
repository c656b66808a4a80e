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
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import mcp.types as types

from gateway.errors import GatewayError
from gateway.middleware import arguments
from gateway.middleware.record import Recorded, Recorder
from gateway.results import HINTS_META_KEY, result_bytes
from gateway.store.backends import Stores
from gateway.store.base import CallLog
from gateway.telemetry.operations import Histogram, shortened
from gateway.telemetry.repeats import Repeating

logger = logging.getLogger(__name__)
_warn = Repeating(logger)
TEXT_SHOWN = 20_000
"""Characters of a result kept for the page (the rest is said to be cut)."""


def _block(block: types.ContentBlock) -> str:
    return block.text if isinstance(block, types.TextContent) else f"[{block.type} block]"


def _text(result: types.CallToolResult) -> str:
    parts = [_block(b) for b in result.content]
    if result.structured_content is not None and not parts:
        parts.append(str(result.structured_content))
    return _shown("\n\n".join(parts))


def _shown(text: str) -> str:
    return text if len(text) <= TEXT_SHOWN else text[:TEXT_SHOWN] + f"\n… ({len(text) - TEXT_SHOWN:,} more characters)"


def _sent(c: Recorded) -> str:
    """What was sent to the server, or why nothing was."""
    size = "" if c.request_bytes is None else f" with {c.request_bytes:,} bytes of arguments"
    if c.sent is not None:
        return f"Sent to server {c.server!r} as its tool {c.sent!r}{size}."
    if c.outcome == "refused":
        return f"Not sent: refused by {c.refusal}."
    if c.outcome == "server error":  # the server was not up to take it
        return f"Not sent: server {c.server!r} was not up to take it."
    return "Not sent: answered by the gateway itself."


def _answered(c: Recorded, original: types.CallToolResult | None) -> str:
    """What the server answered, in a sentence; its text (if any) is shown below it."""
    if c.spilled is not None:
        return f"Spilled whole to the output store as {c.spilled}; the client got a preview and how to read it."
    if c.sent is None:
        return "Nothing: the request did not reach a server."
    if original is not None:
        return "As the server answered it." if not original.is_error else "An error result, as the server sent it."
    if c.outcome == "timeout":
        return "No answer in time: the gateway stopped waiting (the error below)."
    return "No result: the call failed (the error below)."


def received(c: Recorded) -> tuple[list[dict[str, Any]], int | None]:
    """Exactly what the model received, as the chain rendered it (`gateway.middleware.render`: a failure as the error
    result, the hints after it), block by block, each block the gateway added marked with its kind."""
    rendered = c.result
    if rendered is None:
        return [], None
    added = [n for n in (rendered.meta or {}).get(HINTS_META_KEY, []) if isinstance(n, dict)]
    own = max(len(rendered.content) - len(added), 0)
    blocks = [{"text": _shown(_block(b)), "added": None} for b in rendered.content[:own]]
    if rendered.structured_content is not None and not own:
        blocks.append({"text": _shown(str(rendered.structured_content)), "added": None})
    for block, note in zip(rendered.content[own:], added, strict=False):
        blocks.append({"text": _shown(_block(block)), "added": str(note.get("kind"))})
    return blocks, result_bytes(rendered)


def entry(c: Recorded, ref: str, wall: float, redact: Sequence[str] = ()) -> dict[str, Any]:
    """One call as the page shows it: what was sent (with its arguments, `redact`ed, if its caller chose to see
    them), what the server answered, what the model received."""
    original = c.downstream if isinstance(c.downstream, types.CallToolResult) else None
    after, after_bytes = received(c)
    return {
        "ref": ref,
        "at": wall,
        "identity": c.identity.name,
        "owner": c.identity.owner,  # whose stored output a spilled result is (a digest: no name or issuer in it)
        "kind": c.identity.kind,
        "groups": sorted(c.identity.groups),  # what policy rules match: the catalog's column for this identity
        "client": None if c.client is None else shortened(c.client),
        "tool": shortened(c.tool),  # a caller's name of a million characters is not kept whole
        "server": c.server,
        "outcome": c.outcome,
        "refusal": c.refusal,
        "error_type": None if c.error is None else type(c.error).__name__,
        "seconds": c.seconds,
        "request_bytes": c.request_bytes,
        "response_bytes": c.response_bytes if c.response_bytes is not None else after_bytes,
        "server_bytes": None if original is None else result_bytes(original),
        "spilled": c.spilled,
        "hints": [hint.kind for hint in c.hints],
        "trace_id": c.trace_id,
        "error": None if c.error is None else c.error.logged(),
        "sent": _sent(c),
        "arguments": None if c.arguments is None else arguments.shown(c.arguments, redact),
        "before": None if original is None else _text(original),
        "before_note": _answered(c, original),
        "after": after,
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
        redact: Callable[[], Sequence[str]] = lambda: (),
    ) -> None:
        self.recorder = recorder
        self.log = log
        self.redact = redact
        """The argument keys never kept (`page.redact_keys`, read per publish: a reload may change them)."""
        self.keeping = arguments.Keeping(recorder, log)
        self.background = background
        """Publish without being asked (Redis: for the other replicas)."""
        self.every_s = every_s
        self.replica = secrets.token_hex(4)
        self._lock = anyio.Lock()
        self._counted = -1
        self._numbers = itertools.count(1)

    @classmethod
    def of(
        cls, recorder: Recorder | None, stores: Stores, redact: Callable[[], Sequence[str]] = lambda: ()
    ) -> "Publisher | None":
        """The publisher of a recording gateway (None: it does not record); in the background on Redis."""
        if recorder is None:
            return None
        return cls(recorder, stores.calls, background=stores.redis is not None, redact=redact)

    async def flush(self) -> None:
        """Move every recorded call into the log, and put the counts if they changed (raises StoreUnavailable)."""
        async with self._lock:
            calls = self.recorder.drain()
            if any(c.arguments is not None for c in calls):  # kept only if still chosen (maybe off on another replica)
                kept = await self.keeping.refresh()
                calls = [c if c.identity.owner in kept else c._replace(arguments=None) for c in calls]
            if calls:
                now, clock, redact = time.time(), time.perf_counter(), self.redact()
                refs = [f"{self.replica}-{next(self._numbers)}" for _ in calls]
                entries = [entry(c, ref, now - (clock - c.ended), redact) for c, ref in zip(calls, refs, strict=True)]
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
        async with anyio.create_task_group() as tg:
            await tg.start(self.keeping.follow)  # choices made on other replicas
            await self._publish()

    async def _publish(self) -> None:
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
