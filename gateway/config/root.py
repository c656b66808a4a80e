"""The whole config file: one field per section."""

from typing import Annotated

from pydantic import BeforeValidator, model_validator

from gateway.config.base import ConfigModel
from gateway.config.clients import ClientsConfig
from gateway.config.exposure import ExposureConfig
from gateway.config.packages import default_transport
from gateway.config.pipeline import BootstrapConfig, LimitsConfig, SteeringConfig, VersionsConfig
from gateway.config.sections import (
    ListenConfig,
    NamespaceConfig,
    PageConfig,
    StoreConfig,
    TelemetryConfig,
    ThinkConfig,
)
from gateway.config.servers import ServerConfig, ServerName, StdioServerConfig, TokenExchangeConfig
from gateway.config.teams import AuditConfig, AuthConfig, PolicyConfig, SecretsConfig


class GatewayConfig(ConfigModel):
    servers: Annotated[dict[ServerName, ServerConfig], BeforeValidator(default_transport)] = {}
    """Downstream MCP servers by namespace."""
    listen: ListenConfig = ListenConfig()
    namespace: NamespaceConfig = NamespaceConfig()
    limits: LimitsConfig = LimitsConfig()
    steering: SteeringConfig = SteeringConfig()
    versions: VersionsConfig = VersionsConfig()
    bootstrap: BootstrapConfig = BootstrapConfig()
    think: ThinkConfig = ThinkConfig()
    telemetry: TelemetryConfig = TelemetryConfig()
    auth: AuthConfig = AuthConfig()
    policy: PolicyConfig = PolicyConfig()
    secrets: SecretsConfig = SecretsConfig()
    audit: AuditConfig = AuditConfig()
    store: StoreConfig = StoreConfig()
    exposure: ExposureConfig = ExposureConfig()
    """What each client's `tools/list` holds (modes, budgets, pins, per-client rules)."""
    clients: ClientsConfig = ClientsConfig()
    """What the gateway remembers per client (identity and `clientInfo.name`) across its sessions: for how long."""
    page: PageConfig = PageConfig()
    """The page (`/ui`): which argument keys it never keeps."""

    @model_validator(mode="after")
    def _one_unprefixed(self) -> "GatewayConfig":
        bare = [name for name, server in self.servers.items() if not server.prefix]
        if len(bare) > 1:
            raise ValueError(
                f"servers {bare[0]!r} and {bare[1]!r} both set prefix: false, so their tool, prompt and resource "
                "names could collide; keep prefix: false on one of them"
            )
        return self

    @model_validator(mode="after")
    def _exchange_has_jwts(self) -> "GatewayConfig":
        exchanging = [
            name
            for name, server in self.servers.items()
            if not isinstance(server, StdioServerConfig) and isinstance(server.auth, TokenExchangeConfig)
        ]
        if exchanging and self.auth.jwt is None:
            raise ValueError(
                f"servers.{exchanging[0]}.auth is token_exchange, which exchanges the JWT each caller presents, and "
                "auth.jwt is not set, so no caller has one; set auth.jwt (and auth.resource_url) to the identity "
                "provider whose tokens the authorization server accepts, or use another auth type"
            )
        return self
