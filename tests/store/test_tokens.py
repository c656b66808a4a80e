"""People's sealed OAuth tokens on both backends: kept under a digest key, replaced, forgotten; on Redis shared by
every replica (a sign-in on one serves calls through another); locally a file only its owner may read."""

import stat
from pathlib import Path

import pytest

from gateway.store.local.tokens import LocalTokens
from tests.store.conftest import Backend

pytestmark = pytest.mark.anyio


async def test_a_sealed_token_is_kept_replaced_and_forgotten_on_every_replica(backend: Backend) -> None:
    stores, other = backend.open(), backend.open()  # on Redis: two replicas' clients
    try:
        assert stores.tokens is not None and other.tokens is not None
        await stores.tokens.put("ab12", b"sealed-1")
        await stores.tokens.put("ab12", b"sealed-2")
        reader = other.tokens if backend.name == "redis" else stores.tokens
        assert await reader.get("ab12") == b"sealed-2"  # on Redis: signed in on one replica, read on the other
        assert await reader.get("cd34") is None
        await reader.delete("ab12")
        assert await stores.tokens.get("ab12") is None
        await stores.tokens.delete("ef56")  # nothing to say
    finally:
        await stores.aclose()
        await other.aclose()


async def test_a_local_token_file_is_its_owners_alone_and_its_key_must_be_a_digest(tmp_path: Path) -> None:
    tokens = LocalTokens(tmp_path / "tokens")
    await tokens.put("ab12", b"sealed")
    assert stat.S_IMODE((tmp_path / "tokens" / "ab12").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "tokens").stat().st_mode) == 0o700
    for key in ("../escape", "", "ab\u00e912"):  # a path, nothing, a letter beyond ASCII
        with pytest.raises(ValueError, match="not a digest"):
            await tokens.get(key)


async def test_a_local_record_of_any_length_is_read_whole(tmp_path: Path) -> None:
    # Read by descriptor in chunks of 64 KiB: one shorter than a chunk, one exactly a chunk, one of several.
    tokens = LocalTokens(tmp_path / "tokens")
    for size in (300, 64 * 1024, 200_000):
        sealed = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
        await tokens.put("ab12", sealed)
        assert await tokens.get("ab12") == sealed
