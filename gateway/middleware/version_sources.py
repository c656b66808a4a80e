"""Live version catalogs: load `name -> [versions]` from a file, an HTTP endpoint or a downstream tool; check tokens."""

import json
import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

import anyio
import httpx2
import mcp.types as types

from gateway.sdk import CallTool

logger = logging.getLogger(__name__)

Versions = dict[str, list[str]]


class SourceError(Exception):
    """The source could not deliver a catalog (down, timeout, not JSON, wrong shape)."""


def parse(data: Any, where: str) -> Versions:
    """Accept `{name: [versions]}` (a single version string or number is allowed too)."""
    if not isinstance(data, Mapping) or not data:
        raise SourceError(f"{where}: expected a JSON object mapping names to version lists, got {type(data).__name__}")
    out: Versions = {}
    for name, versions in data.items():
        items = versions if isinstance(versions, list) else [versions]
        if not all(isinstance(v, str | int | float) and not isinstance(v, bool) for v in items):
            raise SourceError(f"{where}: versions of {name!r} must be strings or numbers")
        out[str(name)] = [str(v) for v in items]
    return out


async def from_file(path: str) -> Versions:
    try:
        text = await anyio.Path(path).read_text(encoding="utf-8")
        return parse(json.loads(text), path)
    except (OSError, ValueError) as exc:
        raise SourceError(f"{path}: {exc}") from exc


async def from_http(url: str, headers: Mapping[str, str], timeout_s: float) -> Versions:
    try:
        # httpx2's timeout bounds each read, not the whole exchange: a server trickling its body
        # would hold every caller waiting on this load, so `timeout_s` is also the overall deadline.
        with anyio.fail_after(timeout_s):
            async with httpx2.AsyncClient(timeout=timeout_s, headers=dict(headers)) as http:
                response = await http.get(url)
                response.raise_for_status()
                return parse(response.json(), url)
    except TimeoutError:
        raise SourceError(f"{url}: no complete answer within {timeout_s:g} s") from None
    except (httpx2.HTTPError, ValueError) as exc:
        raise SourceError(f"{url}: {type(exc).__name__}: {exc}") from exc


async def from_tool(call_tool: CallTool, tool: str, arguments: dict[str, Any]) -> Versions:
    try:
        result = await call_tool(tool, arguments)
    except Exception as exc:
        raise SourceError(f"tool {tool}: {exc}") from exc
    if result.is_error:
        raise SourceError(f"tool {tool} returned an error")
    if isinstance(result.structured_content, dict):
        return parse(result.structured_content, f"tool {tool}")
    text = "".join(b.text for b in result.content if isinstance(b, types.TextContent))
    try:
        return parse(json.loads(text), f"tool {tool}")
    except ValueError as exc:
        raise SourceError(f"tool {tool}: result is not JSON ({exc})") from exc


def _key(version: str) -> tuple[tuple[int, int | str], ...]:
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"[.+-]", version))


def latest(versions: Iterable[str]) -> str:
    return max(versions, key=_key)


def find_tokens(text: str, pattern: re.Pattern[str]) -> list[tuple[str, str]]:
    """Distinct `(name, version)` pairs in order of first appearance."""
    seen: dict[tuple[str, str], None] = {}
    for match in pattern.finditer(text):
        seen.setdefault((match.group(1), match.group(2)), None)
    return list(seen)


def check_block(tokens: list[tuple[str, str]], catalog: Versions, *, strict_names: bool) -> str:
    """The seed's "Version check" lines; `strict_names` also warns about names the catalog lacks."""
    lines = []
    for name, version in tokens:
        known = catalog.get(name)
        if known is None:
            if strict_names:
                lines.append(f"⚠ {name}@{version} — unknown name. Known: {', '.join(sorted(catalog)[:12])}")
            continue
        if version in known:
            lines.append(f"✓ {name}@{version} — valid")
        else:
            available = ", ".join(f"{name}@{v}" for v in sorted(known, key=_key))
            lines.append(f"⚠ {name}@{version} — not found. Available: {available}. Use {name}@{latest(known)}")
    return "Version check\n" + "\n".join(lines) if lines else ""


def compact(catalog: Versions) -> str:
    """`bun@{1.1.34,1.2} | nodejs@{18,20,22}`"""
    parts = []
    for name in sorted(catalog):
        versions = sorted(catalog[name], key=_key)
        parts.append(f"{name}@{versions[0]}" if len(versions) == 1 else f"{name}@{{{','.join(versions)}}}")
    return " | ".join(parts)
