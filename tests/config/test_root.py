"""The whole config (`gateway.config.root`): what only the sections together can tell is refused naming the keys."""

from pathlib import Path

import pytest
import yaml

from gateway.config import load_config
from gateway.errors import ConfigError


def test_a_token_exchange_server_without_jwt_callers_is_refused_naming_both_keys(tmp_path: Path) -> None:
    server = {
        "transport": "http",
        "url": "https://tickets.example.com/mcp",
        "auth": {"type": "token_exchange", "token_endpoint": "https://login.example.com/token"},
    }
    path = tmp_path / "gateway.yaml"
    path.write_text(yaml.safe_dump({"servers": {"tickets": server}}), encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    [problem] = refused.value.problems
    assert "servers.tickets.auth is token_exchange" in problem and "auth.jwt is not set" in problem, problem
    jwt = {"issuer": "https://login.example.com", "jwks_url": "https://login.example.com/certs"}
    auth = {"resource_url": "https://gw.example/mcp", "jwt": jwt}
    path.write_text(yaml.safe_dump({"servers": {"tickets": server}, "auth": auth}), encoding="utf-8")
    assert load_config(path).auth.jwt is not None
