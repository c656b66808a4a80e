"""The downstream servers' config (`gateway.config.servers`): each transport's keys, the `auth` kinds told apart
by `type`, roots made URIs, and names that can be a namespace; every refusal names the key and what to write."""

from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.config import ClientCredentialsConfig, GatewayConfig, OAuthConfig, TokenExchangeConfig, load_config
from gateway.errors import ConfigError

URL = "https://tickets.example.com/mcp"
JWT = {"issuer": "https://login.example.com", "jwks_url": "https://login.example.com/certs"}


def loaded(tmp_path: Path, servers: dict[str, Any], **sections: Any) -> GatewayConfig:
    path = tmp_path / "gateway.yaml"
    path.write_text(yaml.safe_dump({"servers": servers, **sections}), encoding="utf-8")
    return load_config(path)


def refused(tmp_path: Path, servers: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as failed:
        loaded(tmp_path, servers)
    return failed.value.problems


def test_each_auth_kind_is_read_by_its_type_with_its_defaults(tmp_path: Path) -> None:
    exchange = {"type": "token_exchange", "token_endpoint": "https://login.example.com/token", "audience": "tickets"}
    service = {"type": "client_credentials", "client_id": "gw", "client_secret": "s3", "issuer": JWT["issuer"]}
    config = loaded(
        tmp_path,
        {
            "signed": {"transport": "http", "url": URL, "auth": {"type": "oauth", "scopes": ["read"]}},
            "exchanged": {"transport": "sse", "url": URL, "auth": exchange},
            "service": {"transport": "http", "url": URL, "auth": service},
        },
        auth={"resource_url": "https://gw.example/mcp", "jwt": JWT},
    )
    signed, exchanged, service_auth = (
        getattr(config.servers[n], "auth", None) for n in ("signed", "exchanged", "service")
    )
    assert isinstance(signed, OAuthConfig) and signed.scopes == ["read"] and signed.token_key_env == "GATEWAY_TOKEN_KEY"
    assert isinstance(exchanged, TokenExchangeConfig) and exchanged.subject_token_type == "jwt"
    assert exchanged.audience == "tickets" and exchanged.resource is None
    assert isinstance(service_auth, ClientCredentialsConfig) and service_auth.scopes == []


def test_an_auth_of_an_unknown_type_or_missing_a_key_is_refused_naming_the_key(tmp_path: Path) -> None:
    [unknown] = refused(tmp_path, {"t": {"transport": "http", "url": URL, "auth": {"type": "password"}}})
    assert (
        unknown
        == "servers.t.auth.type: unknown type 'password'; expected one of oauth, token_exchange, client_credentials"
    )
    service = {"type": "client_credentials", "client_id": "gw", "client_secret": "s3"}
    [untyped] = refused(tmp_path, {"t": {"transport": "sse", "url": URL, "auth": {"scopes": ["read"]}}})
    assert untyped == "servers.t.auth.type: missing; expected one of oauth, token_exchange, client_credentials"
    [missing] = refused(tmp_path, {"t": {"transport": "http", "url": URL, "auth": service}})
    assert missing.startswith("servers.t.auth.issuer: "), missing


def test_a_root_is_made_a_file_uri_and_a_relative_one_is_refused_saying_what_to_write(tmp_path: Path) -> None:
    server = {"transport": "stdio", "command": "python3", "roots": [str(tmp_path), "file:///srv/repo"]}
    assert loaded(tmp_path, {"s": server}).servers["s"].roots == [tmp_path.as_uri(), "file:///srv/repo"]
    [problem] = refused(tmp_path, {"s": {**server, "roots": ["repo"]}})
    assert "root 'repo' is not absolute; write an absolute path or a file:// URI" in problem, problem


def test_a_server_name_must_be_a_namespace_and_gateway_is_reserved(tmp_path: Path) -> None:
    plain = {"transport": "stdio", "command": "python3"}
    [bad] = refused(tmp_path, {"has space": plain})
    assert "namespace 'has space' must be 1-32 letters, digits, '_' or '-'" in bad, bad
    [reserved] = refused(tmp_path, {"gateway": plain})
    assert "namespace 'gateway' is reserved for the gateway's own tools" in reserved, reserved
