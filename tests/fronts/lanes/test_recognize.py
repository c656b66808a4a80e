"""The recognizer of a plain `tools/call`: params beside a 2026-era envelope that already passed are checked as the
SDK's per-version surface checks them, and an envelope unlike it is validated whole."""

from typing import Any

import pytest
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY

from gateway.fronts.lanes.recognize import plain_params
from gateway.fronts.tasks_offer import EXTENSION

MODERN = "2026-07-28"
ENVELOPE = {
    PROTOCOL_VERSION_META_KEY: MODERN,
    CLIENT_INFO_META_KEY: {"name": "app", "version": "1"},
    CLIENT_CAPABILITIES_META_KEY: {"sampling": {}},
}
PARAMS: list[dict[str, Any]] = [
    {"name": "k.echo", "arguments": {"text": "hi"}},
    {"name": "k.echo"},
    {"name": "k.echo", "arguments": None},
    {"name": 3, "arguments": {}},
    {"arguments": {}},
    {"name": "k.echo", "arguments": ["not", "an", "object"]},
    {"name": "k.echo", "arguments": "text"},
]


@pytest.mark.parametrize("case", range(len(PARAMS)))
def test_params_beside_an_envelope_that_passed_before_are_checked_as_the_sdk_checks_them(case: int) -> None:
    params = {**PARAMS[case], "_meta": dict(ENVELOPE)}
    assert plain_params(params, MODERN, passed=dict(ENVELOPE)) is plain_params(params, MODERN)


@pytest.mark.parametrize(
    "meta",
    [
        {**ENVELOPE, CLIENT_CAPABILITIES_META_KEY: "none"},
        {**ENVELOPE, CLIENT_INFO_META_KEY: {"version": "1"}},
        {**ENVELOPE, "io.modelcontextprotocol/logLevel": "loud"},
        {PROTOCOL_VERSION_META_KEY: MODERN},
    ],
)
def test_an_envelope_unlike_the_one_that_passed_is_validated_whole(meta: dict[str, Any]) -> None:
    params = {"name": "k.echo", "arguments": {}, "_meta": meta}
    assert not plain_params(params, MODERN, passed=dict(ENVELOPE))
    assert plain_params({**params, "_meta": dict(ENVELOPE)}, MODERN, passed=dict(ENVELOPE))


def test_an_envelope_declaring_the_tasks_extension_is_never_plain_whatever_passed_before() -> None:
    tasks = {**ENVELOPE, CLIENT_CAPABILITIES_META_KEY: {"sampling": {}, "extensions": {EXTENSION: {}}}}
    params = {"name": "k.echo", "arguments": {}, "_meta": tasks}
    assert not plain_params(params, MODERN)
    assert not plain_params(params, MODERN, passed=dict(ENVELOPE))
    assert plain_params({**params, "_meta": dict(ENVELOPE)}, MODERN, passed=dict(ENVELOPE))
