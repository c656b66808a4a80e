import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Whole-gateway cases (tests/system/: installs, client matrices, replicas) first. `./scripts/test` runs the
    files on two workers side by side, handed out in this order: the longest files started last would leave one
    worker running them alone at the end. The order within a file is kept (its module fixtures are shared)."""
    items.sort(key=lambda item: "system" not in item.path.parts)
