"""The `think` config section: seed 000's `config/think.yml` keys as aliases, the context budget and the slow-call
threshold as deployment keys."""

import logging
from pathlib import Path
from typing import Any

import pytest

from gateway.config import load_config
from gateway.config.sections import ThinkConfig
from gateway.errors import ConfigError
from tests.harness import write_config
from tests.think.harness import body_of, gateway_on

pytestmark = pytest.mark.anyio


def test_seed_000s_think_yml_keys_are_aliases_of_the_sections_own() -> None:
    seed = {
        "payload": {"max_snapshot_bytes": 60_000, "max_string_bytes": 4_000, "truncation_strategy": "reject"},
        "logging": {"log_payload_sizes": False, "warn_threshold_bytes": 30_000},
    }
    config = ThinkConfig.model_validate(seed)
    assert (config.max_snapshot_bytes, config.max_string_bytes, config.truncation) == (60_000, 4_000, "reject")
    assert (config.log_payload_sizes, config.warn_threshold_bytes) == (False, 30_000)
    summarize = ThinkConfig.model_validate({"payload": {"truncation_strategy": "summarize"}})
    assert summarize.truncation == "truncate"
    same = ThinkConfig.model_validate({"payload": {"max_snapshot_bytes": 60_000}, "max_snapshot_bytes": 60_000})
    assert same.max_snapshot_bytes == 60_000
    defaults = ThinkConfig()
    assert (defaults.max_context_bytes, defaults.max_context_tasks) == (102_400, 10)  # seed 001's
    assert (defaults.warn_threshold_bytes, defaults.max_snapshot_bytes) == (40_000, 50_000)  # seed 000's


@pytest.mark.parametrize(
    ("think", "named"),
    [
        ({"payload": {"max_stdout_bytes": 1}}, "think.payload.max_stdout_bytes is not a key; payload.* takes"),
        ({"logging": {"level": "debug"}}, "logging.* takes logging.log_payload_sizes, logging.warn_threshold_bytes"),
        ({"payload": {"truncation_strategy": "tail"}}, "truncation_strategy 'tail': use summarize or reject"),
        ({"payload": {"max_snapshot_bytes": 1_000}, "max_snapshot_bytes": 2_000}, "is an alias of max_snapshot_bytes"),
        ({"payload": [1]}, "think.payload must be a mapping"),
    ],
)
def test_a_wrong_seed_key_is_refused_naming_the_key_to_use(tmp_path: Path, think: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(write_config(tmp_path, {}, think=think))
    assert named in str(caught.value)


PLAIN = """\
name: plain_v1
version: "1"
steps:
  - {id: a, call: local.note, input_template: {text: "{{ params.blob | length }}"}}
"""


async def test_a_think_call_over_the_slow_call_threshold_is_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with gateway_on(tmp_path, {"plain_v1": PLAIN}, slow_call_ms=1) as client:
        # a megabyte of params is rendered, hashed and written (fsynced): well over a millisecond on any machine
        body_of(await client.call_tool("think.plan", {"workflow": "plain_v1", "params": {"blob": "b" * 2**20}}))
    slow = [r for r in caplog.records if r.levelno == logging.WARNING and "think.slow_call_ms 1)" in r.getMessage()]
    assert slow and slow[0].getMessage().startswith("think.plan took ")


async def test_the_context_budget_is_a_deployment_key(tmp_path: Path) -> None:
    ctx = """\
name: ctx_v1
version: "1"
steps:
  - {id: a, call: local.note, input_template: {}, capture_as: a}
  - {id: b, call: local.note, deps: [a], input_template: {}}
"""
    for budget, whole in ((100, False), (102_400, True)):
        (tmp_path / str(budget)).mkdir()
        async with gateway_on(tmp_path / str(budget), {"ctx_v1": ctx}, max_context_bytes=budget) as client:
            ins = body_of(await client.call_tool("think.plan", {"workflow": "ctx_v1"}))
            while ins["step_id"] != "b":
                snap = {"text": "t" * 2_000} if ins["step_id"] == "a" else None
                if snap is None:
                    await client.call_tool(ins["call"], ins["input"])
                ref = {"workflow": "ctx_v1", "run_id": ins["run_id"], "step_id": ins["step_id"]}
                ins = body_of(await client.call_tool("think.next", {**ref, "result_snapshot": snap}))
        (entry,) = [e for e in ins["context"] if e["capture"] == "a"]
        assert ("content" in entry) is whole and entry.get("omitted", False) is not whole
