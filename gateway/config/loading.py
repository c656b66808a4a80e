"""Loading a config file: bounded YAML with 1.2 booleans (`reading`), `${VAR}` expansion with named failures,
validation with errors that name the key path, and paths resolved against the file's folder."""

import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any, get_args

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from gateway.config.bundled import data_home
from gateway.config.reading import decode, parse_yaml, read_bytes
from gateway.config.root import GatewayConfig
from gateway.config.servers import DownstreamAuth, HttpServerConfig, ServerConfig, SseServerConfig, StdioServerConfig
from gateway.errors import ConfigError

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_vars(node: Any, path: str, problems: list[str]) -> Any:
    """Replace `${VAR}` in every string; an unset variable is a problem naming the key path."""
    if isinstance(node, dict):
        return {k: expand_vars(v, f"{path}.{k}" if path else str(k), problems) for k, v in node.items()}
    if isinstance(node, list):
        return [expand_vars(v, f"{path}[{i}]", problems) for i, v in enumerate(node)]
    if isinstance(node, str):

        def sub(m: re.Match[str]) -> str:
            value = os.environ.get(m.group(1))
            if value is None and m.group(1) == "GATEWAY_DATA":  # the one variable with a default (bundled.py)
                value = str(data_home())
            if value is None:
                problems.append(f"{path}: environment variable {m.group(1)} is not set")
                return ""
            return value

        return _VAR.sub(sub, node)
    return node


def _beside_interpreter(command: str) -> str:
    """A bare command that is not on PATH, found beside the gateway's own Python instead: servers installed
    with the gateway (the embedded default's) live there, and pipx/uv tool environments are not on PATH."""
    local = Path(sys.executable).parent / command  # not resolved: a venv's python is a symlink out of it
    return str(local) if local.is_file() and os.access(local, os.X_OK) else command


def _resolve_paths(config: GatewayConfig, base: Path) -> GatewayConfig:
    servers: dict[str, StdioServerConfig | HttpServerConfig | SseServerConfig] = {}
    for name, server in config.servers.items():
        if isinstance(server, StdioServerConfig):
            cwd = base / server.cwd if server.cwd else base
            command = server.command
            if command is None or server.package is not None or server.npm is not None:
                pass  # a program of the package's own environment: found there once it is prepared
            elif "/" in command and not os.path.isabs(command):
                command = str(base / command)
            elif "/" not in command and shutil.which(command) is None:
                command = _beside_interpreter(command)
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
    secrets, audit = config.secrets, config.audit
    if secrets.dir is not None:
        secrets = secrets.model_copy(update={"dir": str((base / secrets.dir).resolve())})
    if audit.path not in (None, "-"):
        audit = audit.model_copy(update={"path": str((base / str(audit.path)).resolve())})
    return config.model_copy(
        update={
            "servers": servers,
            "limits": limits,
            "versions": versions,
            "think": think,
            "secrets": secrets,
            "audit": audit,
        }
    )


def _tags(union: Any, key: str) -> tuple[str, ...]:
    """The values of `key` that tell a discriminated union's models apart (`Annotated[A | B, Field(...)]`)."""
    return tuple(get_args(model.model_fields[key].annotation)[0] for model in get_args(get_args(union)[0]))


_TAGS = {"transport": _tags(ServerConfig, "transport"), "type": _tags(DownstreamAuth, "type")}
"""Per discriminator, its tags: a server's `transport`, a server's `auth.type`."""


def _location(loc: tuple[int | str, ...]) -> str:
    """The key path as it reads in the YAML: `servers.k.args[1]`."""
    parts = list(loc)
    # Pydantic puts the discriminator's tag after the key it tells apart (servers.k.stdio.command,
    # servers.k.auth.oauth.scopes); drop only those, so a server that happens to be called "http" keeps its name.
    if len(parts) > 4 and parts[0] == "servers" and parts[3] == "auth" and parts[4] in _TAGS["type"]:
        del parts[4]
    if len(parts) > 2 and parts[0] == "servers" and parts[2] in _TAGS["transport"]:
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
        case "union_tag_invalid" | "union_tag_not_found":
            key = str(err.get("ctx", {}).get("discriminator", "")).strip("'")
            where += f".{key}"
            tags = ", ".join(_TAGS.get(key, ()))
            tag = err.get("ctx", {}).get("tag")
            msg = (
                f"unknown {key} {tag!r}; expected one of {tags}"
                if tag is not None
                else f"missing; expected one of {tags}"
            )
        case "value_error":
            msg = msg.removeprefix("Value error, ")
    return f"{where}: {msg}"


def parse_config(data: Any, source: str, base: Path, *, unset_ok: bool = False) -> GatewayConfig:
    """Validate already-loaded YAML data.

    `unset_ok`: an unset `${VAR}` reads as empty instead of a problem (`gateway prepare` installs what the config
    names before its credentials exist, e.g. in an image build).

    Raises:
        ConfigError: with one problem per line, each naming `source` and the key path.
    """
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(source, [f"(top level): expected a mapping, got {type(data).__name__}"])
    problems: list[str] = []
    data = expand_vars(data, "", problems)
    if problems and not unset_ok:
        raise ConfigError(source, problems)
    try:
        config = GatewayConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(source, [_problem(err) for err in exc.errors()]) from None
    try:
        return _resolve_paths(config, base)
    except ValueError as exc:  # a NUL byte ("\\0" in YAML) in a folder name
        raise ConfigError(source, [f"(paths): a path the system cannot take: {exc}"]) from None


def load_config(path: str | Path, *, whole: bool = False, unset_ok: bool = False) -> GatewayConfig:
    """Read (bounded: `gateway.config.reading`), expand and validate a config file.

    `whole`: refuse an empty file rather than read it as a config without servers (a reload: almost surely a
    file caught mid-write, which would stop every server). `unset_ok`: as `parse_config`'s.

    Raises:
        ConfigError: the file is missing, not YAML, over a bound, or invalid; every problem names the file.
    """
    path = Path(path)
    text = decode(read_bytes(path), str(path))
    if whole and not text.strip():
        raise ConfigError(str(path), ["(file): empty; a reload needs the whole config (save it again)"])
    return parse_config(parse_yaml(text, str(path)), str(path), path.parent.resolve(), unset_ok=unset_ok)
