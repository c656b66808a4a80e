"""Per-user upstream credentials: `${user:NAME}` in a server's settings, resolved for the identity calling.

Sources, tried in the configured order: the request header the client sent (`X-Gateway-Secret-NAME`, for IDE
configs that hold the user's own token), a folder of `<identity>/<NAME>` files readable only by the
gateway's user, the OS keyring, and (stdio only, where the one user is the OS user) the environment. A
user whose secret none of them has gets an error naming the secret and how to provide it: never another
user's value, never a shared fallback. A file with loose permissions is refused, not used.
"""

import os
import re
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

import mcp.types as types

from gateway.config import HttpServerConfig, SecretsConfig, SseServerConfig, StdioServerConfig
from gateway.errors import GatewayError
from gateway.session import Identity

ServerSettings = StdioServerConfig | HttpServerConfig | SseServerConfig
USER_REF = re.compile(r"\$\{user:([A-Za-z_][A-Za-z0-9_]*)\}")
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}")


class MissingSecret(GatewayError):
    code = types.INVALID_PARAMS

    def __init__(self, server: str, secret: str, identity: Identity, ways: list[str], problems: list[str]) -> None:
        self.secret = secret
        found = f" Problems: {'; '.join(problems)}." if problems else ""
        super().__init__(
            f"Server {server!r} needs the secret {secret} for {identity.name}, and no configured source has it.{found} "
            f"Provide it: {'; or '.join(ways)}. The gateway never falls back to another user's credentials."
        )


class Source(Protocol):
    def lookup(self, identity: Identity, name: str, request: Mapping[str, str], problems: list[str]) -> str | None:
        """The secret's value, or None (adding to `problems` what made a present value unusable)."""

    def how(self, identity: Identity, name: str) -> str:
        """How this user can provide the secret through this source."""


class HeaderSource:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def lookup(self, identity: Identity, name: str, request: Mapping[str, str], problems: list[str]) -> str | None:
        return request.get(name) or None

    def how(self, identity: Identity, name: str) -> str:
        return f"send the header '{self.prefix}{name.replace('_', '-')}: <value>' with your requests (HTTP)"


class DirSource:
    def __init__(self, root: Path) -> None:
        self.root = root

    def lookup(self, identity: Identity, name: str, request: Mapping[str, str], problems: list[str]) -> str | None:
        if not _SAFE_NAME.fullmatch(identity.name):
            problems.append(f"the identity name {identity.name!r} cannot name a folder in {self.root}")
            return None
        path = self.root / identity.name / name
        try:
            for part in (self.root, path.parent, path):
                _private(part)
            return path.read_text(encoding="utf-8").rstrip("\r\n")
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            problems.append(str(exc))
            return None

    def how(self, identity: Identity, name: str) -> str:
        return f"ask the administrator to write it to {self.root / identity.name / name} (mode 600, folders 700)"


def _private(path: Path) -> None:
    """Owned by the gateway's user and closed to group and others, or a `ValueError` that says how to fix it."""
    info = path.stat()
    if info.st_uid != os.geteuid() or info.st_mode & 0o077:
        mode = stat.S_IMODE(info.st_mode)
        fix = "chmod 700" if path.is_dir() else "chmod 600"
        raise ValueError(
            f"{path} is mode {mode:o} owned by uid {info.st_uid}: not used (run `{fix} {path}` as the gateway's user)"
        )


class KeyringSource:
    def __init__(self, service: str) -> None:
        import keyring  # optional: only a config naming the keyring source needs it

        self.service = service
        self._keyring: Any = keyring

    def lookup(self, identity: Identity, name: str, request: Mapping[str, str], problems: list[str]) -> str | None:
        try:
            value: str | None = self._keyring.get_password(self.service, f"{identity.name}/{name}")
        except Exception as exc:  # noqa: BLE001 -- any keyring backend failure is a missing secret, said why
            problems.append(f"the OS keyring failed: {type(exc).__name__}")
            return None
        return value or None

    def how(self, identity: Identity, name: str) -> str:
        return f"store it in the OS keyring as service {self.service!r}, user '{identity.name}/{name}'"


class EnvSource:
    def lookup(self, identity: Identity, name: str, request: Mapping[str, str], problems: list[str]) -> str | None:
        # Only the OS user's own front (stdio): on HTTP, the gateway's environment belongs to nobody in particular.
        return os.environ.get(name) or None if identity.kind == "os" else None

    def how(self, identity: Identity, name: str) -> str:
        return f"set {name} in the environment the gateway runs in (stdio)"


class Secrets:
    def __init__(self, sources: Iterable[Source]) -> None:
        self.sources = list(sources)

    def resolve(
        self, server: str, identity: Identity, names: Iterable[str], request: Mapping[str, str]
    ) -> dict[str, str]:
        """Every secret in `names` for `identity`; raises `MissingSecret` for the first one no source has."""
        values: dict[str, str] = {}
        for name in sorted(names):
            problems: list[str] = []
            value = next((v for s in self.sources if (v := s.lookup(identity, name, request, problems))), None)
            if value is None:
                raise MissingSecret(server, name, identity, [s.how(identity, name) for s in self.sources], problems)
            values[name] = value
        return values


def from_config(config: SecretsConfig) -> Secrets:
    sources: list[Source] = []
    for kind in config.sources:
        match kind:
            case "header":
                sources.append(HeaderSource(config.header_prefix))
            case "dir" if config.dir is not None:
                sources.append(DirSource(Path(config.dir)))
            case "keyring":
                sources.append(KeyringSource(config.keyring_service))
            case "env":
                sources.append(EnvSource())
    return Secrets(sources)


def references(server: ServerSettings) -> set[str]:
    """The secrets a server's settings use (`${user:NAME}`); empty for a server shared by everyone."""
    return {m.group(1) for text in _texts(server) for m in USER_REF.finditer(text)}


def _texts(server: ServerSettings) -> list[str]:
    if isinstance(server, StdioServerConfig):
        return [*server.env.values(), *server.args]
    return [server.url, *server.headers.values()]


def expand(server: ServerSettings, values: Mapping[str, str]) -> ServerSettings:
    """The server's settings with one user's secrets in place."""

    def sub(text: str) -> str:
        return USER_REF.sub(lambda m: values[m.group(1)], text)

    if isinstance(server, StdioServerConfig):
        update: dict[str, Any] = {
            "env": {k: sub(v) for k, v in server.env.items()},
            "args": [sub(a) for a in server.args],
        }
    else:
        update = {"url": sub(server.url), "headers": {k: sub(v) for k, v in server.headers.items()}}
    return server.model_copy(update=update)
