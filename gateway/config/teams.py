"""Config of a shared gateway: `auth` (who is calling), `policy` (what they may use), `secrets` (their own
upstream credentials, `${user:NAME}`) and `audit` (one line per call)."""

import importlib.util
import re
from typing import Literal, Self

from pydantic import Field, field_validator, model_validator

from gateway.config.base import ConfigModel

IDENTITY_NAME = r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$"


class StaticTokenConfig(ConfigModel):
    name: str = Field(pattern=IDENTITY_NAME)
    """The identity this token stands for (policy rules and secrets are looked up by it)."""
    token: str | None = None
    """The token itself, normally from the environment: `token: ${ALICE_TOKEN}`."""
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    """Or its SHA-256 in hex (`printf %s TOKEN | sha256sum`), so the config file holds no secret."""
    groups: list[str] = []
    """Groups for policy rules."""
    scopes: list[str] = []

    @model_validator(mode="after")
    def _one_form(self) -> Self:
        if (self.token is None) == (self.sha256 is None):
            raise ValueError(f"token {self.name!r} needs exactly one of `token` or `sha256`")
        if self.token is not None and len(self.token) < 16:
            raise ValueError(f"token {self.name!r} is {len(self.token)} characters; use at least 16 random ones")
        return self


class JwtConfig(ConfigModel):
    issuer: str
    """The identity provider's issuer (`iss` must equal it), e.g. `https://login.example.com/realms/team`."""
    jwks_url: str
    """Where the issuer publishes its signing keys (its `jwks_uri`)."""
    audience: str | None = None
    """The `aud` tokens must carry; `None`: `auth.resource_url`."""
    algorithms: list[str] = ["RS256", "ES256"]
    """Accepted signature algorithms (asymmetric only; `none` and HS* are refused)."""
    required_scopes: list[str] = []
    """Scopes every token must have (a token without them gets 403 insufficient_scope)."""
    name_claim: str = "sub"
    """Claim giving the identity's name for policy rules and secrets (e.g. `preferred_username`)."""
    groups_claim: str = "groups"
    """Claim holding the identity's groups (a list of strings)."""
    leeway_s: float = Field(default=30.0, ge=0, le=300)
    """Clock skew allowed on `exp` / `nbf`."""
    jwks_ttl_s: float = Field(default=3600.0, gt=0)
    """Keys are refetched after this; a token with an unknown `kid` refetches sooner."""
    jwks_min_refresh_s: float = Field(default=30.0, ge=0)
    """Least time between two fetches prompted by unknown `kid`s or by a failed fetch (tokens then get 503)."""
    jwks_timeout_s: float = Field(default=5.0, gt=0, le=60)
    """How long a JWKS fetch may take; requests waiting for it get 503 after this."""
    jwks_max_bytes: int = Field(default=1024 * 1024, ge=1024, le=64 * 1024 * 1024)
    """The most of the JWKS answer read (real ones are a few KB); a bigger answer is refused, tokens get 503."""


class AuthConfig(ConfigModel):
    resource_url: str | None = None
    """This gateway's public URL of `/mcp` (RFC 9728 `resource`, the default audience); needed with `jwt`."""
    authorization_servers: list[str] = []
    """Issuers clients may get tokens from (protected-resource metadata); `[]`: `jwt.issuer`."""
    tokens: list[StaticTokenConfig] = []
    """Static bearer tokens, each mapped to a named identity."""
    jwt: JwtConfig | None = None
    """JWT access tokens from an OAuth 2.1 / OpenID Connect identity provider."""
    admin_groups: list[str] = []
    """Groups whose members may change the running gateway over HTTP (`POST /reload`); `[]`: nobody may. Without
    any auth configured, callers on loopback may (one trust domain, as on stdio). SIGHUP and the file watcher
    reload regardless."""
    page_session_s: float = Field(default=8 * 3600, ge=60, le=30 * 86400)
    """How long a sign-in at the page (/ui/login) lasts: the browser gets a random id of its own, never the token,
    and it ends after this, at the token's own expiry (a JWT's `exp`) if sooner, or at Sign out, on every replica."""

    @model_validator(mode="after")
    def _resource_for_jwt(self) -> Self:
        if self.jwt is not None and self.resource_url is None:
            raise ValueError("`jwt` needs `resource_url` (the URL clients use for /mcp, e.g. https://gw.example/mcp)")
        names = [t.name for t in self.tokens]
        doubled = sorted({n for n in names if names.count(n) > 1})
        if doubled:
            raise ValueError(f"token names must be unique: {', '.join(doubled)} appear more than once")
        return self


class PolicyRuleConfig(ConfigModel):
    name: str | None = None
    """Named in denials; `None`: `policy.rules[<i>]`."""
    identities: list[str] = []
    """Identity name globs the rule applies to; with `groups` also empty it applies to everyone."""
    groups: list[str] = []
    """Groups the rule applies to (any of them)."""
    allow: list[str] | None = None
    """Globs of what this rule allows: tools, prompts, resources and resource templates, each matched by its exposed
    name (a resource: its exposed URI) and by its full name `<server>.<own name or URI>`; with several applying
    rules, their lists add up."""
    deny: list[str] = []
    """Globs of what is refused, matched as `allow` (wins over any allow)."""
    read_only: bool = False
    """Hide and refuse tools not annotated `readOnlyHint` (or annotated `destructiveHint`)."""


class PolicyConfig(ConfigModel):
    rules: list[PolicyRuleConfig] = []
    """Applied to listing, search, calls, reads, prompts, completion and subscriptions; the gateway's own servers
    are outside allow lists and read-only."""


SecretSourceName = Literal["header", "dir", "keyring", "env"]


class SecretsConfig(ConfigModel):
    sources: list[SecretSourceName] = ["header", "dir", "env"]
    """Where `${user:NAME}` is looked up, in order: the client's request header, `dir`, the OS keyring, or
    (stdio only, the OS user's own) the gateway's environment."""
    header_prefix: str = "X-Gateway-Secret-"
    """Request header carrying a secret: prefix + NAME with `_` written `-` (`X-Gateway-Secret-GITLAB-TOKEN`)."""
    dir: str | None = None
    """Folder of `<identity>/<NAME>` files, readable only by the gateway's user (mode 700 / 600)."""
    keyring_service: str = "mcp-gateway"
    """OS keyring service; the entry's user name is `<identity>/<NAME>` (needs the `keyring` package)."""

    @field_validator("sources")
    @classmethod
    def _keyring_installed(cls, sources: list[SecretSourceName]) -> list[SecretSourceName]:
        if "keyring" in sources and importlib.util.find_spec("keyring") is None:
            raise ValueError("the keyring source needs the keyring package: pip install 'mcp-gateway[keyring]'")
        return sources

    @field_validator("header_prefix")
    @classmethod
    def _header_token(cls, prefix: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9-]+", prefix):
            raise ValueError(f"{prefix!r} is not a header name prefix (letters, digits, '-')")
        return prefix


class AuditConfig(ConfigModel):
    path: str | None = None
    """JSON-lines file (relative to the config file's folder), `-` for stdout (stderr on the stdio front, whose
    stdout carries MCP), `None`: no audit log."""
    max_bytes: int = Field(default=10 * 1024 * 1024, ge=1024)
    """The file is rotated to `<path>.1` once it would pass this size."""
    backups: int = Field(default=5, ge=0, le=100)
    """Rotated files kept."""


class PoolConfig(ConfigModel):
    max_processes: int = Field(default=8, ge=1, le=1000)
    """For a server with `${user:…}` secrets: most per-identity processes (connections) at once."""
    idle_s: float = Field(default=600.0, gt=0)
    """A per-identity process unused this long is stopped (started again on the next call)."""
