import gc

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Whole-gateway cases (tests/system/: installs, client matrices, replicas) first. `./scripts/test` runs the
    files on two workers side by side, handed out in this order: the longest files started last would leave one
    worker running them alone at the end. The order within a file is kept (its module fixtures are shared)."""
    items.sort(key=lambda item: "system" not in item.path.parts)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection built (every test module, the gateway and the SDK they import) lives for the whole run: kept
    out of the collector's passes, which otherwise walk it again at every full collection of the run."""
    gc.freeze()
