"""What each server offers, in a few lines: the `instructions` of `initialize` end with them.

Codex puts each MCP server behind its own `tool_search` and reads the server's `instructions` as that namespace's
description, so a gateway in front of many servers says which ones and what they are for, within the 2,048
characters Codex keeps. Each line: the server, its tool count, and the words its tool names use most.
"""

import re
from collections import Counter

from gateway.middleware.exposure.listed import OWN_SERVERS
from gateway.routing.catalog import Catalog

INSTRUCTIONS_CHARS = 2_048
"""What Codex keeps of a server's instructions."""
WORDS = 5
COMMON = frozenset("get list set create update delete add remove search find read write by all the of to and".split())
"""Verbs every server's tools share: the objects say what a server is for."""


def offers(catalog: Catalog, budget: int) -> str:
    """`Servers: …` lines within `budget` characters (servers that do not fit are counted, not cut mid-line)."""
    tools: dict[str, list[str]] = {}
    for entry in catalog.tools.values():
        if entry.server not in OWN_SERVERS:
            tools.setdefault(entry.server, []).append(entry.original)
    if not tools or budget <= 0:
        return ""
    lines = ["Servers behind this gateway:"]
    size = len(lines[0])
    for server, names in sorted(tools.items(), key=lambda item: -len(item[1])):
        words = Counter(w for name in names for w in re.split(r"[^a-z0-9]+", name.lower()) if len(w) > 2)
        for plural in [w for w in words if w.endswith("s") and w[:-1] in words]:  # "requests" counts as "request"
            words[plural[:-1]] += words.pop(plural)
        top = [w for w, _ in words.most_common(WORDS + len(COMMON)) if w not in COMMON and w != server][:WORDS]
        count = f"{len(names)} tool{'s' if len(names) > 1 else ''}"
        line = f"- {server}: {count}" + (f" ({', '.join(top)})" if top else "")
        if size + len(line) + 40 > budget:
            lines.append(f"- and {len(tools) - len(lines) + 1} more servers")
            break
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)
