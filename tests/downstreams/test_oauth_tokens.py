"""A person's sealed records for an OAuth server (`gateway.downstreams.oauth_tokens`) in a real token folder: a grant
is held only while it opens under the gateway's key, and a server's ask for a wider scope (a step-up) is kept sealed
beside it, for `STEP_UP_S` only, where every process on the store reads it."""

import time
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from mcp.shared.auth import OAuthToken

from gateway.downstreams.oauth_tokens import STEP_UP_S, SealedTokens, TokenKeyMissing, sealer, step_up_of
from gateway.store.local.tokens import LocalTokens
from tests.downstreams.oauth_harness import ALICE

pytestmark = pytest.mark.anyio


def contents(folder: Path) -> list[bytes]:
    return [path.read_bytes() for path in folder.iterdir()]


async def test_a_grant_is_held_only_while_it_opens_under_the_key_and_until_it_is_forgotten(tmp_path: Path) -> None:
    store = LocalTokens(tmp_path)
    mine = SealedTokens(store, Fernet(Fernet.generate_key()), ALICE, "forge")
    assert not await mine.held()
    await mine.set_tokens(OAuthToken(access_token="alice-access", expires_in=3600))
    rotated = SealedTokens(store, Fernet(Fernet.generate_key()), ALICE, "forge")  # the key changed since
    assert (await mine.held(), await rotated.held(), await rotated.get_tokens()) == (True, False, None)
    await mine.forget()
    assert not await mine.held()


async def test_a_step_up_is_kept_sealed_for_every_process_and_read_only_within_its_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fernet = Fernet(Fernet.generate_key())
    serving = SealedTokens(LocalTokens(tmp_path), fernet, ALICE, "forge")
    await serving.ask_step_up("read admin")
    login = LocalTokens(tmp_path)  # another process on the same folder (`gateway login`)
    assert await step_up_of(login, fernet, ALICE.owner, "forge") == {"scope": "read admin"}
    assert not any(b"admin" in sealed for sealed in contents(tmp_path))
    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now + STEP_UP_S + 1)  # ten minutes on: nobody signed in for it
    assert await step_up_of(login, fernet, ALICE.owner, "forge") is None
    monkeypatch.undo()
    await serving.stepped_up()  # the person signed in for it
    assert await serving.step_up() is None


async def test_a_record_checked_once_is_judged_again_whenever_its_bytes_or_the_key_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `held` remembers which sealed bytes opened under which cipher (a call is not charged a decryption per call),
    # so what must still count at once is any change: a record rewritten under another key, or the key rotated.
    key, other = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    monkeypatch.setenv("GW_TEST_KEY", key)
    store = LocalTokens(tmp_path)
    mine = SealedTokens(store, sealer("GW_TEST_KEY"), ALICE, "forge")
    await mine.set_tokens(OAuthToken(access_token="alice-access", expires_in=3600))
    assert await mine.held() and await SealedTokens(store, sealer("GW_TEST_KEY"), ALICE, "forge").held()
    assert sealer("GW_TEST_KEY") is sealer("GW_TEST_KEY")  # one cipher per key value
    foreign = SealedTokens(store, Fernet(other.encode()), ALICE, "forge")
    await foreign.set_tokens(OAuthToken(access_token="planted", expires_in=3600))  # same place, another key
    assert not await SealedTokens(store, sealer("GW_TEST_KEY"), ALICE, "forge").held()
    monkeypatch.setenv("GW_TEST_KEY", other)  # the key rotated to the one the record is sealed under
    assert await SealedTokens(store, sealer("GW_TEST_KEY"), ALICE, "forge").held()
    monkeypatch.setenv("GW_TEST_KEY", "not-a-key")
    with pytest.raises(TokenKeyMissing, match="is not a Fernet key"):
        sealer("GW_TEST_KEY")
