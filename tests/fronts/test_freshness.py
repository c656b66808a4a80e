"""List results to a 2026-era client carry a real TTL (the catalog's own refresh) and `cacheScope: private` whenever
the list may differ per identity, `public` when it is the same for everyone."""

from pathlib import Path
from typing import Any

import pytest

from tests.harness import connected, kitchen, write_config

pytestmark = pytest.mark.anyio


async def _hints(tmp_path: Path, **sections: Any) -> dict[str, tuple[int, str]]:
    config = write_config(tmp_path, {"k": kitchen("k")}, **sections)
    async with connected(config, mode="auto") as (_, client):
        tools = await client.list_tools()
        prompts = await client.list_prompts()
        resources = await client.list_resources()
    return {kind: (r.ttl_ms, r.cache_scope) for kind, r in (("tools", tools), ("prompts", prompts), ("res", resources))}


async def test_a_list_everyone_sees_alike_is_public_and_fresh_until_the_catalog_is_due_again(tmp_path: Path) -> None:
    hints = await _hints(tmp_path, namespace={"catalog_ttl_s": 120})
    for ttl_ms, scope in hints.values():
        assert scope == "public"
        assert 100_000 < ttl_ms <= 120_000  # the catalog's listings were just read: due again in ~120 s


async def test_lists_under_policy_rules_are_private(tmp_path: Path) -> None:
    hints = await _hints(tmp_path, policy={"rules": [{"identities": ["bob"], "deny": ["k.*"]}]})
    assert {scope for _, scope in hints.values()} == {"private"}


async def test_a_tools_list_under_client_rules_is_private_the_other_lists_stay_public(tmp_path: Path) -> None:
    hints = await _hints(tmp_path, exposure={"clients": [{"client": "cursor*", "separator": "_"}]})
    assert hints["tools"][1] == "private"
    assert hints["prompts"][1] == hints["res"][1] == "public"


async def test_a_tools_list_holding_part_of_the_catalog_is_private(tmp_path: Path) -> None:
    hints = await _hints(tmp_path, exposure={"mode": "search"})
    assert hints["tools"][1] == "private"
