"""What both output backends share: ids, pages, the errors a read answers, and the checks before a read (the
typed vocabulary of `gateway.store.base.Outputs`)."""

import json
import re
from dataclasses import dataclass

from gateway.errors import GatewayError, shown

ID = re.compile(r"[0-9a-f]{24}")
ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"))
MAX_PAGE_BYTES = 20_000


def _continues(byte: int) -> bool:
    """A UTF-8 continuation byte (10xxxxxx): not the start of a character."""
    return (byte & 0xC0) == 0x80


class OutputError(GatewayError):
    """A read of a spilled output that cannot be served (unknown, expired, bad id or range)."""


@dataclass(frozen=True, slots=True)
class Spilled:
    id: str
    text_bytes: int
    """Size of the result's text view (what `read` pages through)."""
    stored_bytes: int
    """Size on disk, compressed."""


@dataclass(frozen=True, slots=True)
class Page:
    id: str
    offset: int
    text: str
    total_bytes: int

    @property
    def next_offset(self) -> int | None:
        end = self.offset + len(self.text.encode())
        return end if end < self.total_bytes else None


def check_range(offset: int, length: int) -> None:
    if offset < 0:
        raise OutputError(f"offset must be 0 or more, got {offset}.")
    if not 1 <= length <= MAX_PAGE_BYTES:
        raise OutputError(f"length must be between 1 and {MAX_PAGE_BYTES:,} bytes, got {length}.")


def check_offset(output_id: str, offset: int, total: int) -> None:
    if offset >= total and not (offset == 0 and total == 0):
        raise OutputError(f"offset {offset:,} is past the end of output {output_id!r} ({total:,} bytes).")


def cut_page(output_id: str, offset: int, length: int, total: int, chunk: bytes) -> Page:
    """The page at `offset` from `chunk` (the text's bytes from `offset`, `length + 6` of them or up to the end):
    at most `length` bytes (one whole character if that is longer), cut on UTF-8 character boundaries."""
    start = 0
    while start < len(chunk) and start < 3 and _continues(chunk[start]):
        start += 1  # the offset landed inside a character: skip its continuation bytes
    end = min(start + length, len(chunk))
    while start < end < len(chunk) and _continues(chunk[end]):
        end -= 1  # the range ends inside a character: leave it for the next page
    if end == start < len(chunk):
        # `length` is shorter than the character here: serve that one character whole, or a
        # paging client would get an empty page whose next offset is its own offset, forever.
        end += 1
        while end < len(chunk) and _continues(chunk[end]):
            end += 1
    text = chunk[start:end].decode("utf-8")
    return Page(output_id, offset + start, text, total)


def missing(output_id: str, note: str = "") -> OutputError:
    return OutputError(
        f"No stored output {output_id!r}. It may never have existed or was already cleaned up{note}; "
        "call the original tool again."
    )


def check_id(output_id: str) -> None:
    if not ID.fullmatch(output_id):
        raise OutputError(f"{shown(output_id)} is not an output id (24 hex characters, as given in the spill notice).")
