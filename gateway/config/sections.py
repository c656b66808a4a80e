"""Config of the fronts and the engine: `listen`, `namespace`, `telemetry`, `think`, `store`, `page`."""

import ipaddress
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from gateway.config.base import ConfigModel


class ListenConfig(ConfigModel):
    host: str = "127.0.0.1"
    """Interface for `serve --http` when the command line gives none; keep it on loopback unless fronted."""
    port: int = Field(default=8765, ge=0, le=65535)
    """Port for `serve --http` when the command line gives none."""
    allowed_hosts: list[str] = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    """Host header values accepted (DNS-rebinding protection); `*` as port matches any port."""
    allowed_origins: list[str] = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    """Origin header values accepted from browsers."""
    bearer_tokens_env: str = "GATEWAY_BEARER_TOKENS"
    """Environment variable holding comma-separated bearer tokens; when set and non-empty, HTTP requires one."""
    forwarded_client_header: str | None = Field(default=None, pattern=r"^[A-Za-z0-9-]{1,64}$")
    """Behind a load balancer: the request header in which it puts the client's own `address:port` (HAProxy:
    `http-request set-header X-Forwarded-Client %[src]:%[src_port]`). A 2026-era session (no session id) is then
    keyed by the client's connection instead of the balancer's. Only name a header the balancer overwrites: a
    client could otherwise pick the key (its own identity's sessions only). None: the TCP peer."""
    trusted_proxies: list[str] = []
    """Proxies (addresses or networks: `127.0.0.1`, `10.0.0.0/8`) whose forwarding headers (Forwarded,
    X-Forwarded-For, X-Real-IP) are believed. Without auth, the page, /metrics, /reload and /healthz's details
    answer callers on this machine only, judged on the connection's peer: a request through a proxy is refused
    unless its proxy is listed here and the headers name a client on this machine (nginx on this host with
    `proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;`). A proxy that sends none of them makes its
    callers look local: configure auth instead. A listed proxy's `X-Forwarded-Proto`/`Forwarded: proto=` is
    believed too (the page's sign-in cookie is `Secure` behind a TLS proxy). `[]`: no proxy is believed."""

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, entries: list[str]) -> list[str]:
        for entry in entries:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(f"{entry!r} is not an IP address or network (e.g. 127.0.0.1, 10.0.0.0/8)") from None
        return entries


class NamespaceConfig(ConfigModel):
    separator: str = Field(default=".", min_length=1, max_length=2)
    """Between server and tool name: `git.git_status`. Use `_` for clients that reject dots."""
    max_name_length: int = Field(default=64, ge=16, le=128)
    """Longer exposed names get a deterministic short form with a hash suffix."""
    catalog_ttl_s: float = Field(default=300.0, gt=0)
    """How long a downstream's listing is cached; a `list_changed` from it refreshes at once."""


class TelemetryConfig(ConfigModel):
    exporter: Literal["none", "console", "otlp"] | None = None
    """Span exporter; `None` follows `OTEL_TRACES_EXPORTER` (default none)."""
    endpoint: str | None = None
    """OTLP/HTTP traces endpoint (`…/v1/traces`); metrics go to the same collector's `…/v1/metrics`. `None` follows
    the standard `OTEL_EXPORTER_OTLP_*` variables."""
    service_name: str | None = None
    """`service.name` resource attribute; `None` follows `OTEL_SERVICE_NAME`, else `mcp-gateway`."""


_SEED_THINK_KEYS = {  # seed 000's config/think.yml, `payload:` and `logging:` sections -> this section's keys
    ("payload", "max_snapshot_bytes"): "max_snapshot_bytes",
    ("payload", "max_string_bytes"): "max_string_bytes",
    ("payload", "truncation_strategy"): "truncation",
    ("logging", "log_payload_sizes"): "log_payload_sizes",
    ("logging", "warn_threshold_bytes"): "warn_threshold_bytes",
}
_SEED_TRUNCATION = {"summarize": "truncate", "reject": "reject"}


class ThinkConfig(ConfigModel):
    enabled: bool = True
    """Serve the ThinkConfig engine (`think.*` tools, `prompt.say`, workflow:// resources)."""
    workflows_dirs: list[str] | None = None
    """Folders of `*.yaml` workflows (relative to the config file's folder); None: the project's workflows/."""
    state_dir: str = ".gateway/state"
    """Run state: one JSON file per run under `<state_dir>/<owner>~<workflow>/<run_id>.json` (`<owner>`: a digest of
    the identity that planned it; the local backend only)."""
    max_snapshot_bytes: int = Field(default=50_000, ge=1000)
    """A `think.next` result_snapshot above this is truncated (or rejected, see `truncation`); also the most a
    capture keeps in the run state. A ceiling: a workflow or step may lower it, never raise it."""
    max_string_bytes: int = Field(default=5_000, ge=100)
    """Strings in an oversized snapshot are cut to this."""
    truncation: Literal["truncate", "reject"] = "truncate"
    """What happens to an oversized snapshot."""
    warn_threshold_bytes: int = Field(default=40_000, ge=0)
    """A snapshot over this is logged as a warning and the model is told (`payload_warning` in the answer)."""
    log_payload_sizes: bool = True
    """Log each snapshot's size (INFO); the `think.snapshot.size` histogram records them either way."""
    slow_call_ms: int = Field(default=1_000, ge=0)
    """A Think tool call slower than this is logged as a warning (seed 003's SLOW_THRESHOLD_MS); 0: never."""
    max_context_bytes: int = Field(default=102_400, ge=0)
    """The most an instruction's `context` (earlier captures) holds, as JSON (seed 001's 100 KB); a workflow's
    or step's `limits.max_context_bytes` overrides it."""
    max_context_tasks: int = Field(default=10, ge=0)
    """The most captures an instruction's `context` holds (seed 001); `limits.max_context_tasks` overrides it."""

    @model_validator(mode="before")
    @classmethod
    def _seed_keys(cls, data: Any) -> Any:
        """Seed 000's `config/think.yml` keys (`payload.*`, `logging.*`) as aliases of this section's own."""
        if not isinstance(data, dict) or not ({"payload", "logging"} & set(data)):
            return data
        out = {k: v for k, v in data.items() if k not in ("payload", "logging")}
        for section in ("payload", "logging"):
            given = data.get(section)
            if given is None:
                continue
            if not isinstance(given, dict):
                raise ValueError(f"think.{section} must be a mapping (seed 000's config/think.yml), got {given!r}")
            for key, value in given.items():
                ours = _SEED_THINK_KEYS.get((section, key))
                if ours is None:
                    known = ", ".join(f"{s}.{k}" for s, k in _SEED_THINK_KEYS if s == section)
                    raise ValueError(f"think.{section}.{key} is not a key; {section}.* takes {known}")
                if ours == "truncation":
                    if value not in _SEED_TRUNCATION:
                        raise ValueError(f"think.payload.truncation_strategy {value!r}: use summarize or reject")
                    value = _SEED_TRUNCATION[value]
                if ours in out and out[ours] != value:
                    raise ValueError(
                        f"think.{section}.{key} ({value!r}) and think.{ours} ({out[ours]!r}) disagree: "
                        f"{section}.{key} is an alias of {ours}, keep one"
                    )
                out[ours] = value
        return out


class StoreConfig(ConfigModel):
    backend: Literal["local", "redis"] = "local"
    """Where state that outlives a call lives (Think runs, spilled outputs, the shared cache of version catalogs):
    `local` = files under `think.state_dir` / `limits.outputs_dir` and this process's memory (one gateway);
    `redis` = one Redis shared by every replica behind a load balancer (see README "Running several replicas")."""
    url: str = "redis://127.0.0.1:6379/0"
    """Redis URL for `backend: redis` (`redis://[user:password@]host:port/db`, `rediss://` for TLS); use
    `${REDIS_URL}` to keep a password out of the file."""
    prefix: str = Field(default="mcp-gateway:", pattern=r"^[A-Za-z0-9:_.-]{0,64}$")
    """Prefix of every key the gateway writes, so several gateways (or other apps) can share one Redis."""
    outputs_max_bytes: int = Field(default=1024**3, ge=1024 * 1024)
    """With Redis: the compressed bytes all spilled outputs may take together; past it the oldest are evicted."""


REDACTED_BY_DEFAULT = (
    "password",
    "passwd",
    "token",
    "secret",
    "authorization",
    "api_key",
    "cookie",
    "credentials",
    "private_key",
)


class PageConfig(ConfigModel):
    redact_keys: list[str] = Field(default=list(REDACTED_BY_DEFAULT), max_length=200)
    """Argument keys whose values the page never keeps, for a person who chose "show my own arguments": matched at
    any depth, ignoring case, `-` and `_`, on the whole key or its end (`token` hides `github_token` and `X-Token`,
    not `max_tokens`). Values under other keys are kept as given: add the keys your tools take secrets in."""
