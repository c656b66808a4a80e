"""Spilled outputs on both backends page alike: every byte once, characters never cut (also across Redis's chunk
boundaries), the whole result back, and an expired or evicted one gets the same clear answer on each (what only
Redis does, its size cap and its keys, is tests/store/redis/test_outputs.py's)."""

import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.store.backends import Stores, open_stores
from gateway.store.base import Outputs
from gateway.store.outputs import MAX_PAGE_BYTES, OutputError
from gateway.store.redis.outputs import CHUNK
from tests.services import store_config

pytestmark = pytest.mark.anyio

OWNER = "tester"

# ~700 KB over three Redis chunks, 1-, 2-, 3- and 4-byte characters mixed, so chunk and page edges cut characters.
TEXT = "".join(f"line {i}: aé漢😀 " * (1 + i % 3) + "\n" for i in range(14_000))
RESULT = {"content": [{"type": "text", "text": TEXT}], "structuredContent": {"n": 1}}


@pytest.fixture(params=["local", "redis"])
async def stores(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Stores]:
    url = request.getfixturevalue("redis").url if request.param == "redis" else ""
    opened = open_stores(store_config(request.param, url, f"t{secrets.token_hex(4)}:", tmp_path))
    yield opened
    await opened.aclose()


async def read_all(outputs: Outputs, output_id: str, length: int) -> str:
    parts, offset = [], 0
    while True:
        page = await outputs.read(OWNER, output_id, offset, length)
        parts.append(page.text)
        if page.next_offset is None:
            return "".join(parts)
        assert page.next_offset > offset
        offset = page.next_offset


async def test_an_output_pages_back_whole_with_no_character_cut(stores: Stores) -> None:
    spilled = await stores.outputs.spill(OWNER, RESULT, TEXT)
    assert spilled.text_bytes == len(TEXT.encode()) > 2 * CHUNK
    assert await read_all(stores.outputs, spilled.id, MAX_PAGE_BYTES) == TEXT
    assert await stores.outputs.read_whole(OWNER, spilled.id) == RESULT
    # pages that start inside a character, across a chunk edge, and shorter than a character
    for offset in (1, CHUNK - 2, CHUNK - 1, 2 * CHUNK + 1):
        page = await stores.outputs.read(OWNER, spilled.id, offset, 7)
        assert page.text and TEXT.encode()[page.offset :].startswith(page.text.encode())
    page = await stores.outputs.read(OWNER, spilled.id, CHUNK - 3, 1)
    assert len(page.text) == 1


async def test_bad_reads_say_what_is_wrong(stores: Stores) -> None:
    spilled = await stores.outputs.spill(OWNER, RESULT, TEXT)
    cases = {
        "nothing": "is not an output id",
        "0" * 24: "No stored output",
    }
    for output_id, message in cases.items():
        with pytest.raises(OutputError, match=message):
            await stores.outputs.read(OWNER, output_id)
    with pytest.raises(OutputError, match="past the end"):
        await stores.outputs.read(OWNER, spilled.id, spilled.text_bytes)
    with pytest.raises(OutputError, match="length must be between"):
        await stores.outputs.read(OWNER, spilled.id, 0, MAX_PAGE_BYTES + 1)


def listed(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*"))


async def test_an_id_no_spill_makes_is_refused_naming_it_cut_before_it_reaches_a_file_or_key(
    stores: Stores, tmp_path: Path
) -> None:
    files = listed(tmp_path)
    for odd in ("x" * 5000, f"{'0' * 24}.json/x", f"../{'0' * 24}", "0" * 23 + "\x00"):
        for read in (stores.outputs.read, stores.outputs.read_whole):
            with pytest.raises(OutputError) as refused:
                await read(OWNER, odd)
            message = str(refused.value)
            assert message.startswith(f"{odd[:64]!r}") and "is not an output id" in message and len(message) < 200
    assert listed(tmp_path) == files


async def test_an_empty_text_is_one_empty_page(stores: Stores) -> None:
    spilled = await stores.outputs.spill(OWNER, {"content": []}, "")
    page = await stores.outputs.read(OWNER, spilled.id)
    assert (page.text, page.total_bytes, page.next_offset) == ("", 0, None)
