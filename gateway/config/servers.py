"""Config of the downstream servers: one model per transport, the filters, and the namespace rule."""

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from gateway.config.base import ConfigModel
from gateway.config.packages import check_npm, check_pypi, check_sources
from gateway.config.pipeline import SizeLimitsConfig
from gateway.config.teams import PoolConfig


class ToolFilterConfig(ConfigModel):
    include: list[str] = ["*"]
    """Glob patterns of downstream tool names to expose (matched against the original name)."""
    exclude: list[str] = []
    """Glob patterns of downstream tool names to hide; wins over `include`."""


def _root_uri(value: str) -> str:
    if value.startswith("file://"):
        return value
    path = Path(value).expanduser()
    if not path.is_absolute():
        raise ValueError(f"root {value!r} is not absolute; write an absolute path or a file:// URI")
    return path.as_uri()


class _ServerBase(ConfigModel):
    timeout_s: float = Field(default=60.0, gt=0)
    """Seconds a single request to this server may take before the caller gets a timeout error; a tool call's
    progress notifications each grant it this long again, up to `max_timeout_s`."""
    max_timeout_s: float | None = Field(default=None, gt=0)
    """The longest a tool call that keeps reporting progress may take; default 10 × `timeout_s`."""
    connect_timeout_s: float = Field(default=30.0, gt=0)
    """Seconds the connection handshake may take before the start counts as failed."""
    tools: ToolFilterConfig = ToolFilterConfig()
    """Which of the server's tools are exposed."""
    protocol: Literal["auto", "legacy", "modern"] = "auto"
    """Protocol era: `auto` probes 2026-07-28 and falls back, `legacy` forces the initialize handshake."""
    limits: SizeLimitsConfig = SizeLimitsConfig()
    """Size-guard overrides for all of this server's tools."""
    pool: PoolConfig = PoolConfig()
    """Per-identity processes (connections), used when the server's settings contain `${user:NAME}`."""
    prefix: bool = True
    """`false`: this server's tools, prompts and resources keep their own names (a drop-in for the server)."""
    roots: list[Annotated[str, AfterValidator(_root_uri)]] = []
    """Folders (absolute paths or `file://` URIs) the server is told when it asks for roots outside a client's call
    (over HTTP; on stdio the client is asked first): e.g. the folders a filesystem server may use."""


class StdioServerConfig(_ServerBase):
    transport: Literal["stdio"]
    command: str | None = None
    """Executable; a relative path containing `/` resolves against the config file's folder. With `package` or
    `npm`: the name of one of that package's programs (default: the one named like the package)."""
    package: Annotated[str | None, AfterValidator(check_pypi)] = None
    """A pinned PyPI requirement (`mcp-gitlab==0.21.2`): the gateway installs it into an environment of its own
    (`gateway prepare`, or on first use) and runs its console script; `transport` may then be left out."""
    npm: Annotated[str | None, AfterValidator(check_npm)] = None
    """A pinned npm package (`@scope/server@1.2.3`): installed with `npm install` into a folder of its own; its
    bin is run (Node.js and npm must be on PATH)."""
    args: list[str] = []
    """Arguments; the child runs in `cwd`, so relative paths work."""
    env: dict[str, str] = {}
    """Extra environment variables (the child inherits only HOME, PATH, LOGNAME, SHELL, TERM, USER)."""
    cwd: str | None = None
    """Working directory; defaults to the config file's folder, relative paths resolve against it."""
    max_message_bytes: int | None = None
    """Largest single message accepted from the child; `None` follows `limits.max_downstream_bytes`."""

    @model_validator(mode="after")
    def _one_source(self) -> "StdioServerConfig":
        check_sources(self.command, self.package, self.npm)
        return self


class OAuthConfig(ConfigModel):
    """The server is an OAuth-protected resource: each person signs in to it once and the gateway acts as them.

    Discovery follows the server's 401 (protected-resource metadata, then the authorization server's); the client
    is registered dynamically unless `client_id` (or `client_metadata_url`) says who the gateway is there."""

    type: Literal["oauth"]
    client_id: str | None = None
    """A client registered at the authorization server by hand; unset: dynamic client registration."""
    client_secret: str | None = None
    """That client's secret (write `${NAME}` to read it from the environment); unset: a public client."""
    client_metadata_url: str | None = None
    """An HTTPS URL of a client ID metadata document, used as the client id where the server supports it."""
    scopes: list[str] = []
    """Scopes to ask for; empty: those the server advertises (a step-up on `insufficient_scope` adds more)."""
    token_key_env: str = "GATEWAY_TOKEN_KEY"
    """The environment variable holding the key that encrypts stored tokens (a Fernet key:
    `python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'`)."""


class TokenExchangeConfig(ConfigModel):
    """Each caller acts as themselves without a browser: the front-door JWT they called with is exchanged (RFC 8693)
    at the identity provider's token endpoint for a token for this server, kept per identity until it ends."""

    type: Literal["token_exchange"]
    token_endpoint: str
    """The authorization server's token endpoint that accepts `urn:ietf:params:oauth:grant-type:token-exchange`."""
    audience: str | None = None
    """`audience` of the exchange: the server's name at the authorization server (as the AS expects it)."""
    resource: str | None = None
    """`resource` of the exchange (RFC 8707): the server as the AS knows it; unset (and no `audience`): `url`."""
    scopes: list[str] = []
    """Scopes to ask for; empty: whatever the authorization server grants by default."""
    subject_token_type: Literal["jwt", "access_token"] = "jwt"
    """How the caller's JWT is presented: `urn:ietf:params:oauth:token-type:jwt` or `…:access_token`."""
    client_id: str | None = None
    """The gateway's client at the authorization server (HTTP Basic with `client_secret`); unset: none is sent."""
    client_secret: str | None = None
    """That client's secret (write `${NAME}` to read it from the environment)."""
    token_key_env: str = "GATEWAY_TOKEN_KEY"
    """The environment variable holding the Fernet key that encrypts the exchanged tokens at rest."""


class ClientCredentialsConfig(ConfigModel):
    """The gateway calls this server as one service identity (OAuth client credentials), the same for every caller:
    a service credential, so use it only where everyone may do what the service account may."""

    type: Literal["client_credentials"]
    client_id: str
    client_secret: str
    """Write `${NAME}` to read it from the environment."""
    issuer: str
    """The authorization server the credentials belong to: the token endpoint is discovered from the server's 401
    and the secret is sent only to the token endpoint of this issuer's metadata."""
    scopes: list[str] = []
    """Scopes to ask for; empty: those the server advertises."""


DownstreamAuth = Annotated[OAuthConfig | TokenExchangeConfig | ClientCredentialsConfig, Field(discriminator="type")]


class HttpServerConfig(_ServerBase):
    transport: Literal["http"]
    url: str
    """Streamable HTTP endpoint, e.g. `http://127.0.0.1:9000/mcp`."""
    headers: dict[str, str] = {}
    """Headers sent with every request (e.g. `Authorization: Bearer ${TOKEN}`)."""
    auth: DownstreamAuth | None = None
    """`{type: oauth}`: every person signs in and calls with their own token; `{type: token_exchange}`: their
    front-door JWT is exchanged for one; `{type: client_credentials}`: one service token for everyone."""


class SseServerConfig(_ServerBase):
    transport: Literal["sse"]
    url: str
    """Legacy HTTP+SSE endpoint, e.g. `http://127.0.0.1:9000/sse`."""
    headers: dict[str, str] = {}
    """Headers sent with every request."""
    auth: DownstreamAuth | None = None
    """`{type: oauth}`: every person signs in and calls with their own token; `{type: token_exchange}`: their
    front-door JWT is exchanged for one; `{type: client_credentials}`: one service token for everyone."""
    max_event_bytes: int | None = None
    """Largest SSE event accepted; `None` follows `limits.max_downstream_bytes` (the stock client caps at 1 MiB)."""


ServerConfig = Annotated[StdioServerConfig | HttpServerConfig | SseServerConfig, Field(discriminator="transport")]


def _check_namespace(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}", name):
        raise ValueError(f"namespace {name!r} must be 1-32 letters, digits, '_' or '-'")
    if name == "gateway":
        raise ValueError("namespace 'gateway' is reserved for the gateway's own tools")
    return name


# Validated as a dict key (not by a validator on `servers`) so an error's location names the server.
ServerName = Annotated[str, AfterValidator(_check_namespace)]
