"""The fixtures of the OAuth tests (`test_oauth*.py`; their helpers are in `oauth_harness.py`): the guarded server,
started once per test module, the token key, and an `OAuth` with its pool on the guarded server's `forge`."""

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from gateway.downstreams.oauth import OAuth
from gateway.downstreams.pool import Pool
from gateway.store.local.tokens import LocalTokens
from tests.downstreams.oauth_harness import GATEWAY, pool_of, server
from tests.servers.guarded import serving


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving(tmp_path_factory.mktemp("guarded")) as base:
        yield base


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    value = Fernet.generate_key().decode()
    monkeypatch.setenv("GATEWAY_TOKEN_KEY", value)
    return value


@pytest.fixture
async def running(guarded: str, key: str, tmp_path: Path) -> AsyncIterator[tuple[OAuth, Pool, LocalTokens]]:
    store = LocalTokens(tmp_path / "tokens")
    config = server(guarded)
    async with OAuth(lambda: {"forge": config}, store, GATEWAY) as oauth, pool_of(oauth, config).running() as pool:
        yield oauth, pool, store
