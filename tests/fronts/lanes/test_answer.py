"""What both lanes answer: a lane call names its client as the SDK path does (a 2026-era request's envelope), so a
client's rule and its memory across connections hold from its very first call, served by a lane."""

from pathlib import Path

import httpx2
import pytest
from mcp_types import CLIENT_INFO_META_KEY

from tests.fronts.lanes.test_http import answer, envelope, headers
from tests.harness import http_gateway, kitchen, write_config

pytestmark = pytest.mark.anyio


async def test_a_2026_clients_first_call_served_by_the_lane_is_under_its_clients_rule(tmp_path: Path) -> None:
    # Before: the lane noted no client name, so a first call was under the default rule (`.` names: k_echo unknown)
    # and its session was not the client's (the driver again on every new connection).
    rules = {"clients": [{"client": "strict-*", "separator": "_"}]}
    config = write_config(tmp_path, {"k": kitchen("k")}, exposure=rules)
    info = {CLIENT_INFO_META_KEY: {"name": "strict-app", "version": "1"}}
    async with http_gateway(config) as base:
        replies = []
        for text in ("one", "two"):  # each on a connection of its own
            async with httpx2.AsyncClient(base_url=base, timeout=30) as http:
                sent = envelope("k_echo", {"text": text}, **info)
                replies.append(answer(await http.post("/mcp", json=sent, headers=headers("k_echo"))))
    assert [r["result"]["content"][0]["text"] for r in replies] == ["one", "two"]
    drivers = [[b["text"].startswith("[gateway] Driver ") for b in r["result"]["content"][1:]] for r in replies]
    assert [any(d) for d in drivers] == [True, False]
