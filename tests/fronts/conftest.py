"""One gateway for the front tests that only make calls and open sessions of their own on a plain configuration."""

from collections.abc import Iterator

import pytest

from tests.harness import http_gateway_process, kitchen, write_config


@pytest.fixture(scope="session")
def kitchen_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`gateway serve --http` with the kitchen server `k` and nothing else configured: its base URL. For tests that
    neither change its configuration nor its server's tools, nor read the server's events (those start their own);
    each opens its own sessions, and its first call takes a bootstrap, if one is still due, before it compares."""
    with http_gateway_process(write_config(tmp_path_factory.mktemp("kitchen-gateway"), {"k": kitchen("k")})) as base:
        yield base
