"""The response pipeline's config (`limits`, `steering`, `versions`, `bootstrap`): defaults a gateway runs on
unconfigured, and every bad value refused naming its key path, a version check naming a catalog that does not
exist included."""

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.config import GatewayConfig, load_config
from gateway.config.pipeline import DEFAULT_PATTERN, MIB
from gateway.errors import ConfigError


def load(tmp_path: Path, data: dict[str, Any]) -> GatewayConfig:
    path = tmp_path / "gateway.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return load_config(path)


def problems(tmp_path: Path, data: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, data)
    return info.value.problems


def test_an_unconfigured_gateway_runs_on_the_documented_defaults(tmp_path: Path) -> None:
    config = load(tmp_path, {})
    limits = config.limits
    assert (limits.max_message_bytes, limits.max_downstream_bytes) == (64 * MIB, 256 * MIB)
    assert (limits.max_inline_bytes, limits.truncation_strategy, limits.outputs_ttl_s) == (20_000, "both", 7200.0)
    assert (config.bootstrap.mode, config.steering.hints, config.versions.checks) == ("summary", [], [])


def test_limits_below_their_floor_are_refused_naming_the_key(tmp_path: Path) -> None:
    found = problems(tmp_path, {"limits": {"max_inline_bytes": 10, "tools": {"git.*": {"max_request_bytes": 0}}}})
    assert sorted(p.split(":")[0] for p in found) == ["limits.max_inline_bytes", "limits.tools.git.*.max_request_bytes"]


def test_a_hint_rule_needs_tools_a_known_moment_and_text(tmp_path: Path) -> None:
    found = problems(tmp_path, {"steering": {"hints": [{"tools": [], "on": "later", "text": ""}]}})
    assert sorted(p.split(":")[0] for p in found) == [
        "steering.hints[0].on",
        "steering.hints[0].text",
        "steering.hints[0].tools",
    ]


def test_a_version_source_needs_the_field_its_type_reads(tmp_path: Path) -> None:
    catalog = {"source": {"type": "http"}}
    [found] = problems(tmp_path, {"versions": {"catalogs": {"live": catalog}}})
    assert found.startswith("versions.catalogs.live.source:") and found.endswith("a 'http' source needs `url`")


def test_every_check_naming_an_undefined_catalog_is_located_at_its_own_key(tmp_path: Path) -> None:
    catalogs = {"live": {"source": {"type": "file", "path": "v.json"}}}
    checks = [{"catalog": "live"}, {"catalog": "nope"}, {"catalog": "gone"}]
    found = problems(tmp_path, {"versions": {"catalogs": catalogs, "checks": checks}})
    assert found == [
        "versions.checks[1].catalog: 'nope' is not defined under versions.catalogs (defined: live)",
        "versions.checks[2].catalog: 'gone' is not defined under versions.catalogs (defined: live)",
    ]


def test_a_check_pattern_must_compile_with_a_name_and_a_version_group(tmp_path: Path) -> None:
    catalogs = {"live": {"source": {"type": "tool", "tool": "catalog.list_versions"}}}

    def check(pattern: str) -> list[str]:
        return problems(
            tmp_path, {"versions": {"catalogs": catalogs, "checks": [{"catalog": "live", "pattern": pattern}]}}
        )

    assert "needs exactly 2 groups (name, version), has 1" in check(r"(\w+)@\d+")[0]
    assert "not a valid regex" in check(r"(\w+@")[0]
    assert (
        load(tmp_path, {"versions": {"catalogs": catalogs, "checks": [{"catalog": "live"}]}}).versions.checks[0].pattern
        == DEFAULT_PATTERN
    )


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("Use nodejs@20. Or bun@1.1.34", [("nodejs", "20"), ("bun", "1.1.34")]),  # prose: the dot ends the sentence
        ("mail user@example.com", []),  # an address's domain starts with a letter: no version
        ("npm i @scope/pkg@2", [("pkg", "2")]),
        ("python@3.12-slim, uv@0.5.1+local", [("python", "3.12-slim"), ("uv", "0.5.1+local")]),
    ],
)
def test_the_default_pattern_finds_name_at_version_tokens_and_not_addresses(text: str, tokens: list[Any]) -> None:
    assert re.findall(DEFAULT_PATTERN, text) == tokens
