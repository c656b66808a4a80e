"""The gateway's config: pydantic models per section (`*Config`) and `load_config()`.

Every key is a field with a docstring; unknown keys are errors that name the key. The models live by
section (`servers`, `sections`, `pipeline`); `loading` reads, expands and validates a file.
"""

from gateway.config.base import ConfigModel
from gateway.config.clients import ClientsConfig
from gateway.config.exposure import ClientRuleConfig, ExposureConfig
from gateway.config.loading import load_config, parse_config
from gateway.config.pipeline import (
    DEFAULT_PATTERN,
    MIB,
    BootstrapConfig,
    HintRuleConfig,
    LimitsConfig,
    SizeLimitsConfig,
    SteeringConfig,
    VersionCatalogConfig,
    VersionCheckConfig,
    VersionsConfig,
    VersionSourceConfig,
)
from gateway.config.root import GatewayConfig
from gateway.config.sections import ListenConfig, NamespaceConfig, StoreConfig, TelemetryConfig, ThinkConfig
from gateway.config.servers import (
    ClientCredentialsConfig,
    HttpServerConfig,
    OAuthConfig,
    ServerConfig,
    SseServerConfig,
    StdioServerConfig,
    TokenExchangeConfig,
    ToolFilterConfig,
)
from gateway.config.teams import (
    AuditConfig,
    AuthConfig,
    JwtConfig,
    PolicyConfig,
    PolicyRuleConfig,
    PoolConfig,
    SecretsConfig,
    StaticTokenConfig,
)

__all__ = [
    "DEFAULT_PATTERN",
    "MIB",
    "AuditConfig",
    "AuthConfig",
    "BootstrapConfig",
    "ClientCredentialsConfig",
    "ClientRuleConfig",
    "ClientsConfig",
    "ConfigModel",
    "ExposureConfig",
    "GatewayConfig",
    "HintRuleConfig",
    "HttpServerConfig",
    "JwtConfig",
    "LimitsConfig",
    "ListenConfig",
    "NamespaceConfig",
    "OAuthConfig",
    "PolicyConfig",
    "PolicyRuleConfig",
    "PoolConfig",
    "SecretsConfig",
    "ServerConfig",
    "SizeLimitsConfig",
    "SseServerConfig",
    "StaticTokenConfig",
    "StdioServerConfig",
    "SteeringConfig",
    "StoreConfig",
    "TelemetryConfig",
    "ThinkConfig",
    "TokenExchangeConfig",
    "ToolFilterConfig",
    "VersionCatalogConfig",
    "VersionCheckConfig",
    "VersionSourceConfig",
    "VersionsConfig",
    "load_config",
    "parse_config",
]
