"""Audit log: one JSON line per `tools/call`: who, which session, which tool, what came of it, how big, how long.

Arguments appear only as the SHA-256 of their canonical JSON, the session as a digest of its key, the
identity by name and principal: no argument value, token or secret is ever written. Lines go to a file
(rotated by size, created private: mode 600) or to stdout. The middleware runs last, so it sees every
decision the others made (spilled, refused, hints), and it writes for refused calls too.
"""

import hashlib
import json
import logging
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import mcp.types as types
from opentelemetry import trace

from gateway.config import AuditConfig
from gateway.errors import DownstreamError
from gateway.pipeline import Call, Middleware

logger = logging.getLogger(__name__)


class AuditFile:
    """Appends lines to `path`, rotating to `path.1` … `path.<backups>` once it would pass `max_bytes`."""

    def __init__(self, path: Path, *, max_bytes: int = 10 * 1024 * 1024, backups: int = 5) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.backups = backups
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self._open()

    def _open(self) -> TextIO:
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        return os.fdopen(fd, "a", encoding="utf-8")

    def write(self, line: str) -> None:
        if self._file.closed:  # a call finishing while the gateway shuts down
            return
        if self._file.tell() + len(line) + 1 > self.max_bytes and self._file.tell() > 0:
            self._rotate()
        self._file.write(line + "\n")
        self._file.flush()

    def _rotate(self) -> None:
        self._file.close()
        for i in range(self.backups - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{i}")
            if older.exists():
                older.replace(self.path.with_name(f"{self.path.name}.{i + 1}"))
        if self.backups > 0:
            self.path.replace(self.path.with_name(f"{self.path.name}.1"))
        else:
            self.path.unlink()
        self._file = self._open()

    def close(self) -> None:
        self._file.close()


class AuditStream:
    """Lines to a stream: stdout, or stderr on the stdio front (whose stdout carries MCP)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        pass


def digest(value: Any) -> str | None:
    """SHA-256 of the canonical JSON (sorted keys); None when the value has no JSON form."""
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    except (ValueError, RecursionError):
        return None
    return hashlib.sha256(text.encode()).hexdigest()


def outcome(call: Call) -> str:
    if call.error is not None:
        return type(call.error).__name__
    if isinstance(call.result, types.CallToolResult) and call.result.is_error:
        return "tool_error"
    return "ok"


class Audit(Middleware):
    name = "audit"

    def __init__(self, sink: AuditFile | AuditStream) -> None:
        self.sink = sink

    async def on_response(self, call: Call) -> None:
        identity = call.session.identity
        context = trace.get_current_span().get_span_context()
        decisions: dict[str, Any] = {"hints": [hint.kind for hint in call.hints]}
        if call.spilled is not None:
            decisions["spilled"] = call.spilled
        if call.error is not None and not isinstance(call.error, DownstreamError):  # the gateway said no
            decisions["refused"] = call.refused_by or type(call.error).__name__
        record = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "identity": identity.name,
            "principal": identity.key,
            "session": hashlib.sha256(call.session.key.encode()).hexdigest()[:16],
            "tool": call.params.get("name"),
            "server": call.server,
            "server_tool": call.tool,
            "arguments_sha256": digest(call.params.get("arguments")),
            "outcome": outcome(call),
            "duration_ms": round((time.perf_counter() - call.started) * 1000, 3),
            "request_bytes": call.request_bytes,
            "response_bytes": call.response_bytes(),
            "decisions": decisions,
            "trace_id": format(context.trace_id, "032x") if context.is_valid else None,
        }
        try:
            self.sink.write(json.dumps(record, separators=(",", ":")))
        except OSError as exc:  # a full disk must not fail the call; it is said loudly instead
            logger.error("audit: cannot write %s: %s", getattr(self.sink, "path", "stdout"), exc)


def sink(config: AuditConfig) -> AuditFile | AuditStream | None:
    if config.path is None:
        return None
    if config.path == "-":
        return AuditStream(sys.stdout)
    return AuditFile(Path(config.path), max_bytes=config.max_bytes, backups=config.backups)
