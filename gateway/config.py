"""Pydantic models for the gateway's YAML config, `${VAR}` expansion and `load_config()`.

Every key is a field with a docstring; unknown keys are errors that name the key.
"""

import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from gateway.errors import ConfigError
from gateway.policy import Bootstrap, Limits, SizeLimits, Steering, Versions
from gateway.yamlfile import expand_vars, read_yaml


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class ToolFilter(_Model):
    include: list[str] = ["*"]
    """Glob patterns of downstream tool names to expose (matched against the original name)."""
    exclude: list[str] = []
    """Glob patterns of downstream tool names to hide; wins over `include`."""


class _ServerBase(_Model):
    timeout_s: float = Field(default=60.0, gt=0)
    """Seconds a single request to this server may take before the caller gets a timeout error."""
    connect_timeout_s: float = Field(default=30.0, gt=0)
    """Seconds the connection handshake may take before the start counts as failed."""
    tools: ToolFilter = ToolFilter()
    """Which of the server's tools are exposed."""
    protocol: Literal["auto", "legacy", "modern"] = "auto"
    """Protocol era: `auto` probes 2026-07-28 and falls back, `legacy` forces the initialize handshake."""
    limits: SizeLimits = SizeLimits()
    """Size-guard overrides for all of this server's tools."""


class StdioServer(_ServerBase):
    transport: Literal["stdio"]
    command: str
    """Executable; a relative path containing `/` resolves against the config file's folder."""
    args: list[str] = []
    """Arguments; the child runs in `cwd`, so relative paths work."""
    env: dict[str, str] = {}
    """Extra environment variables (the child inherits only HOME, PATH, LOGNAME, SHELL, TERM, USER)."""
    cwd: str | None = None
    """Working directory; defaults to the config file's folder, relative paths resolve against it."""
    max_message_bytes: int | None = None
    """Largest single message accepted from the child; `None` follows `limits.max_downstream_bytes`."""


class HttpServer(_ServerBase):
    transport: Literal["http"]
    url: str
    """Streamable HTTP endpoint, e.g. `http://127.0.0.1:9000/mcp`."""
    headers: dict[str, str] = {}
    """Headers sent with every request (e.g. `Authorization: Bearer ${TOKEN}`)."""


class SseServer(_ServerBase):
    transport: Literal["sse"]
    url: str
    """Legacy HTTP+SSE endpoint, e.g. `http://127.0.0.1:9000/sse`."""
    headers: dict[str, str] = {}
    """Headers sent with every request."""
    max_event_bytes: int | None = None
    """Largest SSE event accepted; `None` follows `limits.max_downstream_bytes` (the stock client caps at 1 MiB)."""


ServerConfig = Annotated[StdioServer | HttpServer | SseServer, Field(discriminator="transport")]


def _check_namespace(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}", name):
        raise ValueError(f"namespace {name!r} must be 1-32 letters, digits, '_' or '-'")
    if name == "gateway":
        raise ValueError("namespace 'gateway' is reserved for the gateway's own tools")
    return name


# Validated as a dict key (not by a validator on `servers`) so an error's location names the server.
ServerName = Annotated[str, AfterValidator(_check_namespace)]


class Listen(_Model):
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


class Namespace(_Model):
    separator: str = Field(default=".", min_length=1, max_length=2)
    """Between server and tool name: `git.git_status`. Use `_` for clients that reject dots."""
    max_name_length: int = Field(default=64, ge=16, le=128)
    """Longer exposed names get a deterministic short form with a hash suffix."""
    catalog_ttl_s: float = Field(default=300.0, gt=0)
    """How long a downstream's listing is cached; a `list_changed` from it refreshes at once."""


class Telemetry(_Model):
    exporter: Literal["none", "console", "otlp"] | None = None
    """Span exporter; `None` follows `OTEL_TRACES_EXPORTER` (default none)."""
    endpoint: str | None = None
    """OTLP/HTTP traces endpoint; `None` follows the standard `OTEL_EXPORTER_OTLP_*` variables."""
    service_name: str | None = None
    """`service.name` resource attribute; `None` follows `OTEL_SERVICE_NAME`, else `mcp-gateway`."""


class Think(_Model):
    enabled: bool = True
    """Serve the Think engine (`think.*` tools, `prompt.say`, workflow:// resources)."""
    workflows_dirs: list[str] | None = None
    """Folders of `*.yaml` workflows (relative to the config file's folder); None: the project's workflows/."""
    state_dir: str = ".gateway/state"
    """Run state: one JSON file per run under `<state_dir>/<workflow>/<run_id>.json`."""
    max_snapshot_bytes: int = Field(default=50_000, ge=1000)
    """A `think.next` result_snapshot above this is truncated (or rejected, see `truncation`)."""
    max_string_bytes: int = Field(default=5_000, ge=100)
    """Strings in an oversized snapshot are cut to this."""
    truncation: Literal["truncate", "reject"] = "truncate"
    """What happens to an oversized snapshot."""


class GatewayConfig(_Model):
    servers: dict[ServerName, ServerConfig] = {}
    """Downstream MCP servers by namespace."""
    listen: Listen = Listen()
    namespace: Namespace = Namespace()
    limits: Limits = Limits()
    steering: Steering = Steering()
    versions: Versions = Versions()
    bootstrap: Bootstrap = Bootstrap()
    think: Think = Think()
    telemetry: Telemetry = Telemetry()


def _resolve_paths(config: GatewayConfig, base: Path) -> GatewayConfig:
    servers: dict[str, StdioServer | HttpServer | SseServer] = {}
    for name, server in config.servers.items():
        if isinstance(server, StdioServer):
            cwd = base / server.cwd if server.cwd else base
            command = server.command
            if "/" in command and not os.path.isabs(command):
                command = str(base / command)
            server = server.model_copy(update={"cwd": str(cwd.resolve()), "command": command})
        servers[name] = server
    limits = config.limits.model_copy(update={"outputs_dir": str((base / config.limits.outputs_dir).resolve())})
    catalogs = {}
    for name, catalog in config.versions.catalogs.items():
        if catalog.source.path is not None:
            source = catalog.source.model_copy(update={"path": str((base / catalog.source.path).resolve())})
            catalog = catalog.model_copy(update={"source": source})
        catalogs[name] = catalog
    versions = config.versions.model_copy(update={"catalogs": catalogs})
    think = config.think.model_copy(
        update={
            "state_dir": str((base / config.think.state_dir).resolve()),
            "workflows_dirs": None
            if config.think.workflows_dirs is None
            else [str((base / d).resolve()) for d in config.think.workflows_dirs],
        }
    )
    return config.model_copy(update={"servers": servers, "limits": limits, "versions": versions, "think": think})


_TAGS = ("stdio", "http", "sse")


def _location(loc: tuple[int | str, ...]) -> str:
    """The key path as it reads in the YAML: `servers.k.args[1]`."""
    parts = list(loc)
    # Pydantic puts the discriminator tag after the server name (servers.k.stdio.command); drop
    # only that one, so a server that happens to be called "http" keeps its name.
    if len(parts) > 2 and parts[0] == "servers" and parts[2] in _TAGS:
        del parts[2]
    path = ""
    for part in parts:
        if part == "[key]":  # the error is about the dict key itself, already named
            continue
        path += f"[{part}]" if isinstance(part, int) else f".{part}" if path else str(part)
    return path or "(top level)"


def _problem(err: ErrorDetails) -> str:
    where, msg = _location(err["loc"]), err["msg"]
    match err["type"]:
        case "extra_forbidden":
            msg = "unknown key"
        case "union_tag_invalid":
            where += ".transport"
            msg = f"unknown transport {err.get('ctx', {}).get('tag')!r}; expected one of {', '.join(_TAGS)}"
        case "union_tag_not_found":
            where += ".transport"
            msg = f"missing; expected one of {', '.join(_TAGS)}"
        case "value_error":
            msg = msg.removeprefix("Value error, ")
    return f"{where}: {msg}"


def parse_config(data: Any, source: str, base: Path) -> GatewayConfig:
    """Validate already-loaded YAML data.

    Raises:
        ConfigError: with one problem per line, each naming `source` and the key path.
    """
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(source, [f"(top level): expected a mapping, got {type(data).__name__}"])
    problems: list[str] = []
    data = expand_vars(data, "", problems)
    if problems:
        raise ConfigError(source, problems)
    try:
        config = GatewayConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(source, [_problem(err) for err in exc.errors()]) from None
    return _resolve_paths(config, base)


def load_config(path: str | Path) -> GatewayConfig:
    """Read, expand and validate a config file.

    Raises:
        ConfigError: the file is missing, not YAML, or invalid; every problem names the file and key path.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(str(path), [f"(file): cannot read: {exc.strerror}"]) from None
    try:
        data = read_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "(file)"
        raise ConfigError(str(path), [f"{where}: not valid YAML: {getattr(exc, 'problem', exc)}"]) from None
    return parse_config(data, str(path), path.parent.resolve())
