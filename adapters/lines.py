"""Newline-delimited JSON-RPC: linear-time line splitting with a per-line cap, and parsing off the event loop."""

import json
import re
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
import mcp.types as types
from mcp.types import RequestId
from pydantic import ValidationError
from pydantic_core import from_json

BIG_LINE_BYTES = 1024 * 1024
# Lines at least this long are parsed in a worker thread (~0.15 s for 100 MB).
THREAD_PARSE_BYTES = 4 * 1024 * 1024

# Enough of an oversized line to find the id of the response it carries.
_HEAD_BYTES = 256

# A server serializes responses as {"jsonrpc":"2.0","id":…,"result":…} (or "error"); requests and
# notifications carry "method" first and must not match, or we would fail an unrelated pending call.
_RESPONSE_HEAD = re.compile(
    rb'\A\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*,'
    rb'\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"(?:result|error)"\s*:'
)
# A client serializes requests as {"jsonrpc":"2.0","id":…,"method":…}; the id lets the front answer the
# oversized request itself instead of leaving the caller waiting for a reply that cannot come.
_REQUEST_HEAD = re.compile(
    rb'\A\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*,'
    rb'\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"method"\s*:'
)


@dataclass(frozen=True)
class Oversized:
    """A line that exceeded the limit and was dropped without being buffered whole."""

    size: int
    """Length of the whole line in bytes, without its newline."""
    head: bytes
    """Its first bytes, kept to recover the id of the request or response it carried."""

    def response_id(self) -> RequestId | None:
        """The id of the JSON-RPC response this line carried, if its head shows one."""
        return _id(_RESPONSE_HEAD, self.head)

    def request_id(self) -> RequestId | None:
        """The id of the JSON-RPC request this line carried, if its head shows one."""
        return request_id(self.head)


def response_id(head: bytes | bytearray) -> RequestId | None:
    """The id of the response a line that cannot be parsed carries, from the line's start."""
    return _id(_RESPONSE_HEAD, bytes(head[:_HEAD_BYTES]))


def request_id(line: bytes | bytearray) -> RequestId | None:
    """The id of a request from the start of its line, for answering a line that cannot be parsed whole."""
    return _id(_REQUEST_HEAD, bytes(line[:_HEAD_BYTES]))


def _id(head: re.Pattern[bytes], line: bytes) -> RequestId | None:
    match = head.match(line)
    if match is None:
        return None
    value = json.loads(match.group(1))
    return value if isinstance(value, int | str) else None


class LineSplitter:
    """Feeds on chunks and returns complete lines; every byte is scanned once.

    The stock SDK reader re-splits the whole pending line on every 64 KiB chunk, which is O(n²)
    for one large message. Here the newline search resumes where the previous one stopped, and a
    line over `limit` is skipped up to its newline instead of accumulating.
    """

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._buf = bytearray()
        self._scanned = 0
        self._skipped = 0
        self._head = b""

    @property
    def pending(self) -> int:
        """Bytes of the current unfinished line seen so far (buffered or skipped)."""
        return self._skipped or len(self._buf)

    def feed(self, chunk: bytes) -> list[bytearray | Oversized]:
        """Consume one chunk; return the lines it completed, in order, without their newlines."""
        out: list[bytearray | Oversized] = []
        if self._skipped:
            end = chunk.find(b"\n")
            if end == -1:
                self._skipped += len(chunk)
                return out
            out.append(Oversized(self._skipped + end, self._head))
            self._skipped = 0
            chunk = chunk[end + 1 :]
        buf = self._buf
        buf += chunk
        pos = self._scanned
        while (end := buf.find(b"\n", pos)) != -1:
            if end > self._limit:
                out.append(Oversized(end, bytes(buf[: min(end, _HEAD_BYTES)])))
            elif 0 < end == len(buf) - 1:
                # The line is the whole buffer (typical for big messages): hand it over, no copy.
                del buf[end:]
                out.append(buf)
                buf = self._buf = bytearray()
                break
            elif end:
                out.append(buf[:end])
            # Deleting from the front of a bytearray is O(1) in CPython: it only moves the start.
            del buf[: end + 1]
            pos = 0
        if len(buf) > self._limit:
            self._head = bytes(buf[:_HEAD_BYTES])
            self._skipped = len(buf)
            buf.clear()
        self._scanned = len(buf)
        return out


class BadId(ValueError):
    """A request whose id is an object, an array, a boolean, a fraction or null: it fails the request type and
    would validate as a notification, which silently drops the id (and leaves the caller waiting)."""

    def __init__(self, value: Any) -> None:
        super().__init__(f"the id {json.dumps(value)[:80]} is not a string or an integer")
        self.value = value


def check_id(message: types.JSONRPCMessage, line: bytes | bytearray) -> None:
    """Raise `BadId` when `message` validated as a notification although its line has an "id" member.

    Raises:
        BadId: with the id's value.
    """
    if not isinstance(message, types.JSONRPCNotification) or b'"id"' not in line:
        return
    try:
        data = from_json(line)
    except ValueError:
        return
    if isinstance(data, dict) and "id" in data:
        raise BadId(data["id"])


class NotJson(ValueError):
    """The line is not valid JSON at all (as opposed to JSON that is not a JSON-RPC message)."""


def _parse_big(line: bytes | bytearray) -> types.JSONRPCMessage:
    # validate_json on the message union holds ~4x a big line while it tries the members (and takes ~1.3 s
    # for 100 MB); plain JSON first, then validating the Python objects, holds 1x and shares the strings.
    try:
        data = from_json(line, cache_strings=False)
    except ValueError as exc:
        raise NotJson(str(exc)) from None
    return types.jsonrpc_message_adapter.validate_python(data, by_name=False)


def _member(data: Any) -> type[types.JSONRPCMessage] | None:
    """The one message type `data`'s keys leave possible, or None when they leave it open."""
    if not isinstance(data, dict):
        return None
    if "method" in data:
        if "result" in data or "error" in data:
            return None
        return types.JSONRPCRequest if "id" in data else types.JSONRPCNotification
    if "result" in data:
        return None if "error" in data else types.JSONRPCResponse
    return types.JSONRPCError if "error" in data else None


def _parse_small(line: bytes | bytearray) -> types.JSONRPCMessage:
    try:
        data = from_json(line)
    except ValueError:
        return types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    return validate_small(data)


def validate_small(data: Any) -> types.JSONRPCMessage:
    """The message a small line's decoded JSON is.

    Raises:
        pydantic.ValidationError: it is not a JSON-RPC message.
    """
    # Validating the message union tries its members one by one (~2x the cost of one); the keys name the one
    # member a message can be. Anything that does not validate as it goes through the union, for the same
    # answer (and error) as before.
    member = _member(data)
    if member is not None:
        try:
            return member.model_validate(data, by_name=False)
        except ValidationError:
            pass
    return types.jsonrpc_message_adapter.validate_python(data, by_name=False)


async def parse(line: bytes | bytearray) -> types.JSONRPCMessage:
    """Parse one line; big ones in a worker thread, so the event loop keeps serving meanwhile.

    Raises:
        ValueError: `NotJson`, or a pydantic ValidationError (not JSON, or not a JSON-RPC message).
    """
    if len(line) < BIG_LINE_BYTES:
        return _parse_small(line)
    if len(line) < THREAD_PARSE_BYTES:
        return _parse_big(line)
    return await anyio.to_thread.run_sync(_parse_big, line)
