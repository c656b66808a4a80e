"""OutputStore and the hosted ways to read it: gzip spill files, paged reads on UTF-8 boundaries, expiry, bad reads."""

import gzip
import json
import os
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import mcp.types as types
import pytest
from mcp import Client, MCPError

from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.session import os_user
from gateway.store.base import owned
from gateway.store.local.outputs import LocalOutputs, OutputStore
from gateway.store.outputs import MAX_PAGE_BYTES, OutputError
from tests.harness import connected, text_of, write_config

pytestmark = pytest.mark.anyio

TEXT = "é€😀" * 5000  # 45,000 bytes; characters of 2, 3 and 4 bytes
RESULT = {"content": [{"type": "text", "text": TEXT}], "isError": False}
TTL = 7200.0
OWNER = os_user().owner
"""The in-process client's identity (the stdio front's OS user): the gateway's outputs are stored as theirs."""


class Clock:
    """Wall-clock seconds the test moves by hand (file mtimes are real, so it starts at now)."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def reassemble(store: OutputStore, output_id: str, length: int) -> str:
    parts: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = store.read(OWNER, output_id, offset, length)
        parts.append(page.text)
        offset = page.next_offset
    return "".join(parts)


def test_spill_writes_the_whole_result_and_its_text_gzip_compressed(tmp_path: Path) -> None:
    store = OutputStore(tmp_path / "out")
    spilled = store.spill(OWNER, RESULT, TEXT)
    assert spilled.text_bytes == len(TEXT.encode()) == 45_000
    files = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert files == [f"{owned(OWNER, spilled.id)}.json.gz", f"{owned(OWNER, spilled.id)}.txt.gz"]
    with gzip.open(tmp_path / "out" / f"{owned(OWNER, spilled.id)}.json.gz", "rb") as gz:
        assert json.loads(gz.read()) == RESULT
    with gzip.open(tmp_path / "out" / f"{owned(OWNER, spilled.id)}.txt.gz", "rb") as gz:
        assert gz.read().decode() == TEXT
    assert spilled.stored_bytes == sum(p.stat().st_size for p in (tmp_path / "out").iterdir())
    assert store.read_whole(OWNER, spilled.id) == RESULT


@pytest.mark.parametrize("length", [1, 7, 1000, 7777, MAX_PAGE_BYTES])
def test_pages_cut_on_utf8_boundaries_reassemble_the_exact_text(tmp_path: Path, length: int) -> None:
    store = OutputStore(tmp_path)
    spilled = store.spill(OWNER, RESULT, TEXT[:300] if length < 10 else TEXT)
    expected = TEXT[:300] if length < 10 else TEXT
    assert reassemble(store, spilled.id, length) == expected


def test_an_offset_inside_a_character_starts_the_page_at_the_next_character(tmp_path: Path) -> None:
    store = OutputStore(tmp_path)
    spilled = store.spill(OWNER, RESULT, TEXT)
    page = store.read(OWNER, spilled.id, 1, 10)  # byte 1 is the second byte of "é"
    assert page.offset == 2
    assert page.text == "€😀é"  # 9 bytes; the next "€" would make 12
    assert page.next_offset == 11
    assert page.total_bytes == 45_000


@pytest.mark.parametrize("length", [1, 2, 3])
def test_a_length_shorter_than_the_character_at_the_offset_still_serves_that_character(
    tmp_path: Path, length: int
) -> None:
    store = OutputStore(tmp_path)
    spilled = store.spill(OWNER, RESULT, TEXT)
    page = store.read(OWNER, spilled.id, 5, length)  # byte 5 starts a 4-byte "😀"
    assert (page.text, page.next_offset) == ("😀", 9)


def test_the_last_page_has_no_next_offset(tmp_path: Path) -> None:
    store = OutputStore(tmp_path)
    spilled = store.spill(OWNER, RESULT, TEXT)
    page = store.read(OWNER, spilled.id, 45_000 - 9, 100)
    assert page.text == "é€😀"
    assert page.next_offset is None


def test_an_empty_output_reads_as_one_empty_page(tmp_path: Path) -> None:
    store = OutputStore(tmp_path)
    spilled = store.spill(OWNER, {"content": []}, "")
    page = store.read(OWNER, spilled.id)
    assert (page.text, page.total_bytes, page.next_offset) == ("", 0, None)


@pytest.mark.parametrize(
    ("output_id", "offset", "length", "message"),
    [
        ("../x", 0, 100, "'../x' is not an output id"),
        ("../../etc/passwd", 0, 100, "is not an output id"),
        ("0" * 24, 0, 100, "No stored output '000000000000000000000000'"),
        (None, -1, 100, "offset must be 0 or more, got -1"),
        (None, 45_000, 100, "offset 45,000 is past the end of output"),
        (None, 0, 0, "length must be between 1 and 20,000 bytes, got 0"),
        (None, 0, MAX_PAGE_BYTES + 1, "length must be between 1 and 20,000 bytes"),
    ],
)
def test_a_bad_read_is_an_output_error_naming_the_problem(
    tmp_path: Path, output_id: str | None, offset: int, length: int, message: str
) -> None:
    store = OutputStore(tmp_path)
    spilled = store.spill(OWNER, RESULT, TEXT)
    with pytest.raises(OutputError, match=re.escape(message)):
        store.read(OWNER, output_id or spilled.id, offset, length)


def test_a_traversal_id_never_touches_a_file_outside_the_store(tmp_path: Path) -> None:
    store = OutputStore(tmp_path / "out")
    store.spill(OWNER, RESULT, TEXT)
    secret = tmp_path / "secret.txt.gz"
    with gzip.open(secret, "wb") as gz:
        gz.write(b"secret")
    with pytest.raises(OutputError, match="is not an output id"):
        store.read(OWNER, "../secret")
    with pytest.raises(OutputError, match="is not an output id"):
        store.read_whole(OWNER, "../secret")
    assert secret.exists()


def test_an_expired_output_is_an_error_and_its_files_are_deleted(tmp_path: Path) -> None:
    clock = Clock()
    store = OutputStore(tmp_path, ttl_s=TTL, clock=clock)
    spilled = store.spill(OWNER, RESULT, TEXT)
    clock.now += TTL - 60
    assert store.read(OWNER, spilled.id, 0, 9).text == "é€😀"
    clock.now += 120
    with pytest.raises(OutputError, match=r"expired \(2\.0 h old, kept 2 h\); call the original tool again"):
        store.read(OWNER, spilled.id)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(OutputError, match="No stored output"):
        store.read_whole(OWNER, spilled.id)


def test_cleanup_deletes_expired_outputs_and_stray_temp_files_and_keeps_fresh_ones(tmp_path: Path) -> None:
    clock = Clock()
    store = OutputStore(tmp_path, ttl_s=TTL, clock=clock)
    first, second = store.spill(OWNER, RESULT, TEXT), store.spill(OWNER, RESULT, "short")
    (tmp_path / ".tmp-abandoned").write_bytes(b"half a write")
    assert store.cleanup() == 0
    assert len(list(tmp_path.iterdir())) == 5
    clock.now += TTL + 1
    assert store.cleanup() == 5
    assert list(tmp_path.iterdir()) == []
    for spilled in (first, second):
        with pytest.raises(OutputError, match="No stored output"):
            store.read(OWNER, spilled.id)


def test_cleanup_of_a_store_whose_folder_does_not_exist_yet_removes_nothing(tmp_path: Path) -> None:
    assert OutputStore(tmp_path / "never-created").cleanup() == 0


def test_a_spill_into_an_unwritable_place_raises_oserror_and_leaves_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a regular file where the outputs folder should go")
    store = OutputStore(blocker / "outputs")
    with pytest.raises(OSError):
        store.spill(OWNER, RESULT, TEXT)
    assert blocker.read_text().startswith("a regular file")


# -- the hosted tool and resource, through an in-process gateway ---------------------------------------


@asynccontextmanager
async def gateway_with_output(tmp_path: Path) -> AsyncIterator[tuple[Client, OutputStore, str]]:
    """A gateway with no downstreams (only its own tools) and one stored output of TEXT."""
    gateway = Gateway(load_config(write_config(tmp_path, {})))
    assert isinstance(gateway.outputs, LocalOutputs)  # the default backend
    spilled = await gateway.outputs.spill(OWNER, RESULT, TEXT)
    async with connected(gateway) as (_, client):
        yield client, gateway.outputs.files, spilled.id


def expire(store: OutputStore, output_id: str) -> None:
    """Age the stored files past the TTL (the gateway's store runs on the real clock)."""
    old = time.time() - store.ttl_s - 60
    for suffix in (".txt.gz", ".json.gz"):
        os.utime(store.directory / f"{owned(OWNER, output_id)}{suffix}", (old, old))


BAD_READS = [
    ("traversal", {"id": "../x"}, "'../x' is not an output id"),
    ("unknown", {"id": "f" * 24}, "No stored output"),
    ("expired", {}, "expired"),
    ("negative offset", {"offset": -5}, "`offset` = -5 (integer): Input should be greater than or equal to 0"),
    ("offset past the end", {"offset": 45_000}, "offset 45,000 is past the end of output"),
]


@pytest.mark.parametrize(("case", "arguments", "message"), BAD_READS, ids=[b[0] for b in BAD_READS])
async def test_a_bad_read_output_call_is_an_error_result_naming_the_problem(
    tmp_path: Path, case: str, arguments: dict[str, object], message: str
) -> None:
    async with gateway_with_output(tmp_path) as (client, store, output_id):
        if case == "expired":
            expire(store, output_id)
        result = await client.call_tool("gateway.read_output", {"id": output_id, **arguments})
        assert result.is_error
        assert message in text_of(result)
        good = await client.call_tool("gateway.read_output", {"id": output_id, "length": 9})
        assert good.is_error == (case == "expired")


async def test_a_length_over_the_page_size_is_clamped_and_says_where_to_go_on(tmp_path: Path) -> None:
    async with gateway_with_output(tmp_path) as (client, store, output_id):
        result = await client.call_tool("gateway.read_output", {"id": output_id, "length": 10 * MAX_PAGE_BYTES})
        page = store.read(OWNER, output_id, 0, MAX_PAGE_BYTES)
    assert not result.is_error
    text = text_of(result)
    assert text.startswith(f"(length {10 * MAX_PAGE_BYTES:,} is over the page size; this page holds at most 20,000")
    assert f'"offset": {page.next_offset}' in text and page.text in text


@pytest.mark.parametrize(
    ("case", "uri", "message"),
    [
        ("traversal", "gateway://outputs/../x", "is not an output id"),
        ("unknown", "gateway://outputs/" + "f" * 24, "No stored output"),
        ("expired", "gateway://outputs/{id}", "expired"),
        ("negative offset", "gateway://outputs/{id}?offset=-5", "offset must be 0 or more, got -5"),
        ("offset past the end", "gateway://outputs/{id}?offset=45000", "past the end of output"),
        ("not a number", "gateway://outputs/{id}?offset=ten", "offset and length must be integers"),
    ],
)
async def test_a_bad_output_resource_read_is_an_mcp_error_naming_the_problem(
    tmp_path: Path, case: str, uri: str, message: str
) -> None:
    async with gateway_with_output(tmp_path) as (client, store, output_id):
        if case == "expired":
            expire(store, output_id)
        with pytest.raises(MCPError, match=message) as caught:
            await client.read_resource(uri.format(id=output_id))
        assert caught.value.code == types.INVALID_PARAMS
