"""The front from door to door: what exposure resolved for a tool call is carried to the forward, and the answer is
finished inside the chain, so the catalog is read once per call (counted in process, at the lookups' seams)."""

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.middleware.exposure.view import Exposure
from gateway.routing.registry import Registry
from tests.harness import connected, text_of, write_config
from tests.servers.kitchen import Kitchen

pytestmark = pytest.mark.anyio

MODES = ("legacy", "2026-07-28")


def counted(monkeypatch: pytest.MonkeyPatch, seen: Counter[str], cls: type, name: str) -> None:
    """`cls.name` still does its work, and each call is counted in `seen` (patched before a gateway binds it)."""
    inner: Callable[..., Any] = getattr(cls, name)

    def counting(*args: Any, **kwargs: Any) -> Any:
        seen[name] += 1
        return inner(*args, **kwargs)

    monkeypatch.setattr(cls, name, counting)


@pytest.mark.parametrize("mode", MODES)
async def test_a_tool_call_reads_the_catalog_once_and_translates_its_name_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    # Before: exposure read the catalog and the session's names, the forward read it again and resolved the name
    # again, the front read it a third time for the session's names to rename the answer (3 and 3).
    seen: Counter[str] = Counter()
    counted(monkeypatch, seen, Registry, "catalog")  # every read, `Registry.view`'s included
    counted(monkeypatch, seen, Registry, "_resolve")
    counted(monkeypatch, seen, Exposure, "session_names")
    rules = {"clients": [{"client": "*", "separator": "_"}]}  # names the gateway's own words must be put in
    config = write_config(tmp_path, {}, exposure=rules)
    gateway = Gateway(load_config(config), in_process={"k": lambda: Kitchen("k", None, 0, []).server})
    async with connected(gateway, mode=mode) as (_, client):
        await client.call_tool("k_echo", {"text": "warm"})  # the first call lists and brings the driver prompt
        seen.clear()
        result = await client.call_tool("k_echo", {"text": "hello"})
    assert text_of(result) == "hello"
    assert seen == {"catalog": 1, "session_names": 1}
