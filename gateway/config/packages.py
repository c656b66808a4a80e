"""The `package:` (PyPI) and `npm:` keys of a stdio server: the pin forms they take, and the checks that tie them
to `command`. The gateway installs such a server into an environment of its own (`gateway.downstreams.envs`).

Each spec is read by its registry's own grammar, then held to what the gateway can pin: PEP 508 through the
`packaging` library (the parser pip itself vendors) with exactly one `==` version and no marker or URL; npm's
package-name rules (those of `validate-npm-package-name` for existing packages) and an exact semver 2.0 version,
never a range, a dist-tag or a git/file/URL spec. Whatever passes goes to pip or npm as one argument, no shell.
"""

import re
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement

PYPI_EXAMPLE = "mcp-server-time==2026.10.19"
NPM_EXAMPLE = "@modelcontextprotocol/server-everything@2026.8.31"
_PYPI_FORM = (
    f"write NAME==VERSION with an exact version (e.g. {PYPI_EXAMPLE}), so every gateway that reads this config "
    "installs the same thing"
)
_NPM_FORM = (
    f"write NAME@VERSION with an exact version X.Y.Z (e.g. {NPM_EXAMPLE}); a range or a tag such as `latest` "
    "installs something else tomorrow"
)
# node-semver's strict FULL version (semver 2.0): no leading zeros, no `v`, no empty identifiers.
_NUMBER = r"(?:0|[1-9]\d*)"
_PRERELEASE_ID = rf"(?:{_NUMBER}|\d*[A-Za-z-][0-9A-Za-z-]*)"
_SEMVER = re.compile(
    rf"{_NUMBER}\.{_NUMBER}\.{_NUMBER}(?:-{_PRERELEASE_ID}(?:\.{_PRERELEASE_ID})*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?"
)
_SEMVER_MAX = 256  # node-semver's MAX_LENGTH
_RANGE_MARKS = re.compile(r"[\^~<>=*|\s]|(?:^|\.)[xX](?:\.|$)|^\d+(?:\.\d+)?$")
_TAG = re.compile(r"[A-Za-z][0-9A-Za-z._-]*")
# encodeURIComponent leaves exactly these: a name (or each half of @scope/name) must be made of them.
_URL_SAFE = re.compile(r"[A-Za-z0-9\-_.!~*'()]+")
_NPM_RESERVED = ("node_modules", "favicon.ico")


def pypi_requirement(spec: str) -> Requirement:
    """The pinned PyPI requirement `spec`: its name, extras and one `==` version.

    Raises:
        ValueError: not PEP 508, or not a pin (a range, a marker, a URL): what is wrong and the form to write.
    """
    try:
        requirement = Requirement(spec)
    except InvalidRequirement as exc:
        first = str(exc).splitlines()[0]
        raise ValueError(f"{spec!r} is not a PEP 508 requirement ({first}); {_PYPI_FORM}") from None
    if requirement.url is not None:
        why = "a direct URL (NAME @ URL) installs whatever that address serves, checked against no version"
    elif requirement.marker is not None:
        why = f"an environment marker (; {requirement.marker}) may leave nothing installed on this machine"
    else:
        specifiers = list(requirement.specifier)
        if len(specifiers) == 1 and specifiers[0].operator == "==" and not specifiers[0].version.endswith("*"):
            return requirement
        why = f"{requirement.specifier} is not one exact version" if specifiers else "no version given"
    raise ValueError(f"{spec!r} is not a pinned PyPI requirement: {why}; {_PYPI_FORM}")


def npm_pin(spec: str) -> tuple[str, str]:
    """The name and exact version of the pinned npm package `spec` (`@scope/server@1.2.3`).

    Raises:
        ValueError: the name breaks npm's rules, or the version is not one exact semver version.
    """
    name, _, version = spec.rpartition("@")
    if not name:  # `name` or `@scope/name`: the only @ is the scope's
        name, version = spec, ""
    if wrong := _npm_name_problems(name):
        raise ValueError(f"{spec!r} is not an npm package: its name {name!r} {'; '.join(wrong)}; {_NPM_FORM}")
    if len(version) <= _SEMVER_MAX and _SEMVER.fullmatch(version):
        return name, version
    raise ValueError(f"{spec!r} is not a pinned npm package: {_npm_version_problem(version)}; {_NPM_FORM}")


def _npm_name_problems(name: str) -> list[str]:
    """npm's rules for a package name that may be installed (`validate-npm-package-name`'s errors; what it only
    warns about, capitals, core-module names, more than 214 characters, was allowed once and still installs)."""
    problems = [
        why
        for broken, why in (
            (not name, "is empty"),
            (name.startswith("."), "starts with a period"),
            (name.startswith("-"), "starts with a hyphen"),
            (name.startswith("_"), "starts with an underscore"),
            (name.strip() != name, "has leading or trailing spaces"),
            (name.lower() in _NPM_RESERVED, "is reserved"),
        )
        if broken
    ]
    if name and _URL_SAFE.fullmatch(name) is None:
        scoped = re.fullmatch(r"@([^/]+)/([^/]+)", name)
        if scoped is None or not all(_URL_SAFE.fullmatch(part) for part in scoped.groups()):
            problems.append("may hold only URL-friendly characters (A-Z a-z 0-9 - _ . ! ~ * ' ( ), and @scope/)")
        elif scoped.group(2).startswith("."):
            problems.append("starts with a period after its scope")
    return problems


def _npm_version_problem(version: str) -> str:
    if not version:
        return "no version given"
    if len(version) > _SEMVER_MAX:
        return f"its version is {len(version)} characters, more than npm's {_SEMVER_MAX}"
    if "||" in version or " - " in version:
        return f"{version!r} is a range"
    if not version.isprintable() or any(char.isspace() for char in version):
        return f"{version!r} holds spaces or control characters"
    if ":" in version or "/" in version:
        return f"{version!r} is a git, file or URL spec, not a version from the registry"
    if version[0] in "v=" and _SEMVER.fullmatch(version.lstrip("v=").strip()):
        return f"{version!r}: write the version without its leading {version[0]!r}"
    if _RANGE_MARKS.search(version):
        return f"{version!r} is a range"
    if _TAG.fullmatch(version):
        return f"{version!r} is a dist-tag, which moves"
    return f"{version!r} is not a semver version (X.Y.Z, no leading zeros, [-prerelease][+build])"


def pypi_name(spec: str) -> str:
    """The distribution name of a pinned PyPI requirement (`mcp-gitlab==0.21.2` -> `mcp-gitlab`)."""
    return pypi_requirement(spec).name


def npm_name(spec: str) -> str:
    """The package name of a pinned npm spec (`@scope/server@1.2.3` -> `@scope/server`)."""
    return npm_pin(spec)[0]


def check_pypi(spec: str | None) -> str | None:
    if spec is None:
        return None
    pypi_requirement(spec.strip())
    return spec.strip()


def check_npm(spec: str | None) -> str | None:
    if spec is None:
        return None
    npm_pin(spec.strip())
    return spec.strip()


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
