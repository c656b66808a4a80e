"""One Redis per test module, and the two backends side by side."""

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

from gateway.store.backends import Stores, open_stores
from tests.services import RedisServer, redis_server, store_config


@pytest.fixture(scope="module")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with redis_server(tmp_path_factory.mktemp("redis")) as server:
        yield server


@dataclass
class Backend:
    name: Literal["local", "redis"]
    url: str
    prefix: str
    folder: Path

    def open(self) -> Stores:
        return open_stores(store_config(self.name, self.url, self.prefix, self.folder))


@pytest.fixture(params=["local", "redis"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    url = request.getfixturevalue("redis").url if request.param == "redis" else ""
    return Backend(request.param, url, f"t{secrets.token_hex(4)}:", tmp_path)
