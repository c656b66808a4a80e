"""A shared gateway's config (`auth`, `policy`, `secrets`, `audit`, `pool`): each mistake an operator can make is
refused naming the key and what to write instead; a config file that holds no secret is possible."""

import hashlib
import importlib.util
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.config import GatewayConfig, load_config
from gateway.errors import ConfigError

TOKEN = "s3cret-token-of-32-characters-xx"


def load(tmp_path: Path, data: dict[str, Any]) -> GatewayConfig:
    path = tmp_path / "gateway.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return load_config(path)


def problems(tmp_path: Path, data: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, data)
    return info.value.problems


def test_a_static_token_is_given_once_as_itself_or_as_its_hash(tmp_path: Path) -> None:
    digest = hashlib.sha256(TOKEN.encode()).hexdigest()
    tokens = [{"name": "alice", "token": TOKEN}, {"name": "bob", "sha256": digest, "groups": ["dev"]}]
    assert [t.name for t in load(tmp_path, {"auth": {"tokens": tokens}}).auth.tokens] == ["alice", "bob"]
    [both] = problems(tmp_path, {"auth": {"tokens": [{"name": "carol", "token": TOKEN, "sha256": digest}]}})
    assert both.endswith("token 'carol' needs exactly one of `token` or `sha256`")
    [neither] = problems(tmp_path, {"auth": {"tokens": [{"name": "carol"}]}})
    assert neither.endswith("token 'carol' needs exactly one of `token` or `sha256`")


def test_a_short_token_is_refused_with_its_length_and_the_minimum(tmp_path: Path) -> None:
    [short] = problems(tmp_path, {"auth": {"tokens": [{"name": "alice", "token": "hunter2"}]}})
    assert short.endswith("token 'alice' is 7 characters; use at least 16 random ones")


def test_token_names_are_identity_names_and_unique(tmp_path: Path) -> None:
    [bad] = problems(tmp_path, {"auth": {"tokens": [{"name": "al ice", "token": TOKEN}]}})
    assert bad.startswith("auth.tokens[0].name:")
    twice = [{"name": "alice", "token": TOKEN}, {"name": "alice", "token": TOKEN + "2"}]
    [doubled] = problems(tmp_path, {"auth": {"tokens": twice}})
    assert doubled.endswith("token names must be unique: alice appear more than once")


def test_jwt_needs_the_url_clients_use_as_its_audience(tmp_path: Path) -> None:
    jwt = {"issuer": "https://idp.example", "jwks_url": "https://idp.example/jwks"}
    [found] = problems(tmp_path, {"auth": {"jwt": jwt}})
    assert "`jwt` needs `resource_url`" in found
    config = load(tmp_path, {"auth": {"jwt": jwt, "resource_url": "https://gw.example/mcp"}})
    assert config.auth.jwt is not None and config.auth.jwt.algorithms == ["RS256", "ES256"]


def test_secret_sources_are_known_names_and_the_header_prefix_a_header_name(tmp_path: Path) -> None:
    [source] = problems(tmp_path, {"secrets": {"sources": ["vault"]}})
    assert source.startswith("secrets.sources[0]:")
    [prefix] = problems(tmp_path, {"secrets": {"header_prefix": "X Secret:"}})
    assert prefix.endswith("'X Secret:' is not a header name prefix (letters, digits, '-')")


def test_the_keyring_source_without_its_package_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "keyring" else find_spec(name, *a)
    )
    [found] = problems(tmp_path, {"secrets": {"sources": ["keyring"]}})
    assert found.endswith("the keyring source needs the keyring package: pip install 'mcp-gateway[keyring]'")


def test_audit_and_pool_bounds_are_checked(tmp_path: Path) -> None:
    found = problems(tmp_path, {"audit": {"backups": 101, "max_bytes": 10}})
    assert sorted(p.split(":")[0] for p in found) == ["audit.backups", "audit.max_bytes"]
    server = {"transport": "stdio", "command": "true", "pool": {"max_processes": 0}}
    [pool] = problems(tmp_path, {"servers": {"h": server}})
    assert pool.startswith("servers.h.pool.max_processes:")
