"""The `package:` (PyPI) and `npm:` keys of a stdio server: the pin forms they take, and the checks that tie them
to `command`. The gateway installs such a server into an environment of its own (`gateway.downstreams.envs`)."""

import re
from typing import Any

# NAME[extras]==VERSION: exact, so every gateway that reads the config installs the same thing.
_PYPI = re.compile(r"([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)(\[[A-Za-z0-9._,\s-]+\])?\s*==\s*([A-Za-z0-9.!+_-]+)")
# [@scope/]name@X.Y.Z[-pre][+build]: npm's exact version (a range such as ^1.2.3 or `latest` is not a pin).
_NPM = re.compile(
    r"((?:@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*)@(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?)"
)
PYPI_EXAMPLE = "mcp-server-time==2026.10.19"
NPM_EXAMPLE = "@modelcontextprotocol/server-everything@2026.8.31"


def pypi_name(spec: str) -> str:
    """The distribution name of a pinned PyPI requirement (`mcp-gitlab==0.21.2` -> `mcp-gitlab`)."""
    match = _PYPI.fullmatch(spec.strip())
    assert match is not None, "validated by check_pypi"
    return match.group(1)


def npm_name(spec: str) -> str:
    """The package name of a pinned npm spec (`@scope/server@1.2.3` -> `@scope/server`)."""
    match = _NPM.fullmatch(spec.strip())
    assert match is not None, "validated by check_npm"
    return match.group(1)


def check_pypi(spec: str | None) -> str | None:
    if spec is not None and _PYPI.fullmatch(spec.strip()) is None:
        raise ValueError(
            f"{spec!r} is not a pinned PyPI requirement; write NAME==VERSION with an exact version (e.g. "
            f"{PYPI_EXAMPLE}), so every gateway that reads this config installs the same thing"
        )
    return None if spec is None else spec.strip()


def check_npm(spec: str | None) -> str | None:
    if spec is not None and _NPM.fullmatch(spec.strip()) is None:
        raise ValueError(
            f"{spec!r} is not a pinned npm package; write NAME@VERSION with an exact version X.Y.Z (e.g. "
            f"{NPM_EXAMPLE}); a range or a tag such as `latest` installs something else tomorrow"
        )
    return None if spec is None else spec.strip()


def check_sources(command: str | None, package: str | None, npm: str | None) -> None:
    """`package` and `npm` exclude each other; with either, `command` may only name a program inside the
    environment the gateway installs (its console script or bin), never a path outside it."""
    if package is not None and npm is not None:
        raise ValueError(
            f"both package ({package!r}) and npm ({npm!r}) are set; a server is one package: keep one of them"
        )
    chosen = package if package is not None else npm
    if chosen is None:
        if command is None:
            raise ValueError(
                "no command, package or npm; give the command to run, or a pinned package for the gateway to "
                f"install (package: {PYPI_EXAMPLE}, or npm: {NPM_EXAMPLE})"
            )
        return
    if command is not None and "/" in command:
        key = "package" if package is not None else "npm"
        raise ValueError(
            f"command {command!r} is a path outside the environment the gateway installs {key} {chosen!r} into; "
            f"with {key}, command names one of that package's own programs (e.g. its console script), or leave "
            "command out to run the one named like the package"
        )


def default_transport(servers: Any) -> Any:
    """A server given by `package` or `npm` is a stdio server: `transport: stdio` may be left out."""
    if not isinstance(servers, dict):
        return servers
    return {
        name: {"transport": "stdio", **entry}
        if isinstance(entry, dict) and "transport" not in entry and ("package" in entry or "npm" in entry)
        else entry
        for name, entry in servers.items()
    }
