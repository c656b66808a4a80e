"""Show my own arguments: whose tool calls are recorded with their arguments (each person's own choice on the page,
off by default, kept in the call log so every replica honours it), and the arguments as the page keeps them: the
values of secret-looking keys replaced, cut to `ARGUMENT_BYTES`.

The recorder only checks an owner against a set it holds (`Recorder.arguments_of`) and keeps a reference; the
redaction and the cut are done when the call is published, off the call's path, where the choice is read again from
the call log: a person who turned it off on another replica has nothing more kept from then on.
"""

import json
import logging
from collections.abc import Iterable
from typing import Any

import anyio

from gateway import results
from gateway.errors import GatewayError
from gateway.middleware.record import Recorder
from gateway.store.base import CallLog
from gateway.telemetry.repeats import Repeating

logger = logging.getLogger(__name__)
_warn = Repeating(logger)

ARGUMENT_BYTES = 4_000
"""UTF-8 bytes of a call's arguments (as indented JSON) the page keeps; past it they are cut, and it says so."""
DEPTH = 32
"""Levels of nesting kept: deeper values are replaced, so no argument can make the redaction recurse without end."""
REDACTED = "[redacted]"
FOLLOW_S = 5.0
"""How often a replica reads who chose to keep their arguments (a choice made on another replica holds here within
this; a choice made here holds at once)."""


def _plain(key: str) -> str:
    return "".join(ch for ch in key.lower() if ch not in "-_ ")


def redacted(value: Any, keys: frozenset[str], depth: int = 0) -> Any:
    """`value` with the value of every key that is, or ends with, one of `keys` (as `_plain` spells them) replaced,
    at any depth."""
    if depth >= DEPTH and isinstance(value, dict | list):
        return f"[nested deeper than {DEPTH} levels: not kept]"
    if isinstance(value, dict):
        return {
            k: REDACTED if any(_plain(str(k)).endswith(key) for key in keys) else redacted(v, keys, depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redacted(v, keys, depth + 1) for v in value]
    return value


def shown(arguments: Any, redact: Iterable[str]) -> str:
    """The arguments as the page keeps them: indented JSON, `redact`ed (the config's `page.redact_keys`), at most
    `ARGUMENT_BYTES`, saying how much was not kept."""
    keys = frozenset(filter(None, map(_plain, redact)))
    text = json.dumps(redacted(arguments, keys), indent=1, ensure_ascii=False, default=str)
    kept = results.cut(text, ARGUMENT_BYTES)
    if kept == text:
        return text
    return kept + f"\n… ({len(text) - len(kept):,} more characters not kept: the page keeps {ARGUMENT_BYTES:,} bytes)"


class Keeping:
    """Who chose to have their calls kept with their arguments: the call log's set, copied onto the recorder when a
    choice is made here, with each publish, and (replicas) every `FOLLOW_S`."""

    def __init__(self, recorder: Recorder, log: CallLog) -> None:
        self.recorder = recorder
        self.log = log

    async def choose(self, owner: str, on: bool) -> None:
        """`owner`'s calls from now on are kept with their arguments (`on`) or without (raises StoreUnavailable)."""
        await self.log.keep_arguments(owner, on)
        await self.refresh()

    async def chosen(self, owner: str) -> bool:
        return owner in await self.log.arguments_kept()

    async def refresh(self) -> frozenset[str]:
        kept = self.recorder.arguments_of = await self.log.arguments_kept()
        return kept

    async def follow(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Read the choices every `FOLLOW_S`, for those made on other replicas (run with replicas only); started once
        the first read is done."""
        while True:
            try:
                await self.refresh()
            except GatewayError as exc:
                _warn.warning("call log: could not read whose arguments to keep (%s); kept as before", exc)
            task_status.started()
            task_status = anyio.TASK_STATUS_IGNORED
            await anyio.sleep(FOLLOW_S)
