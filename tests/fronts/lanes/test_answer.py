"""What both lanes answer: a lane call names its client as the SDK path does (a 2026-era request's envelope), so a
client's rule and its memory across connections hold from its very first call, served by a lane; each result reads
as the SDK's per-version sieve has it."""

import copy
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp_types import CLIENT_INFO_META_KEY
from mcp_types import methods as spec
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from gateway.fronts.lanes.answer import sieved
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


_TEXT = {"type": "text", "text": "hi"}
RESULTS: list[dict[str, Any]] = [
    {"content": [_TEXT], "isError": False},
    {"content": [_TEXT, {"type": "text", "text": ""}], "isError": True, "resultType": "complete"},
    {"content": [], "isError": False, "resultType": "complete"},
    {"content": [_TEXT], "isError": False, "resultType": "input_required"},
    {"content": [{**_TEXT, "annotations": {"audience": ["user"], "lastModified": "2026-01-01T00:00:00Z"}}]},
    {"content": [{**_TEXT, "_meta": {"k": 1}}], "resultType": "complete"},
    {"content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}], "resultType": "complete"},
    {"content": [{"type": "text", "text": 3}], "resultType": "complete"},
    {"content": [_TEXT], "structuredContent": {"a": 1}, "isError": False, "resultType": "complete"},
    {"content": [_TEXT], "isError": "no", "resultType": "complete"},
    {"content": [_TEXT], "_meta": {"k": 1}, "resultType": "complete"},
    {"content": "hi", "resultType": "complete"},
]
PLAIN = [0, 1, 2]


@pytest.mark.parametrize("version", [*KNOWN_PROTOCOL_VERSIONS, "2099-01-01"])
@pytest.mark.parametrize("case", range(len(RESULTS)))
def test_a_lane_answers_each_result_as_the_sdks_per_version_sieve_does(version: str, case: int) -> None:
    try:
        expected: object = spec.serialize_server_result("tools/call", version, copy.deepcopy(RESULTS[case]))
    except (ValidationError, ValueError) as exc:
        expected = type(exc)
    try:
        got: object = sieved(version, copy.deepcopy(RESULTS[case]))
    except (ValidationError, ValueError) as exc:
        got = type(exc)
    assert got == expected


@pytest.mark.parametrize("version", KNOWN_PROTOCOL_VERSIONS)
@pytest.mark.parametrize("case", PLAIN)
def test_a_plain_text_result_is_answered_without_validating_and_dumping_it_again(version: str, case: int) -> None:
    # Before: every answer went through the SDK's sieve, a second validation and dump of a result already read.
    dumped = copy.deepcopy(RESULTS[case])
    if version in MODERN_PROTOCOL_VERSIONS:
        dumped["resultType"] = "complete"  # the render stage writes it for a 2026-era client
    assert sieved(version, dumped) is dumped
