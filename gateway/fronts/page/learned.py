"""The page's view of the tool search's expansions kept in the store (DESIGN §14): every replica's requests
`find_tools` learned from use, and those a client's model wrote through sampling, per tool; for an administrator a
button that takes one back (`POST /ui/learned/forget`, an Origin-checked form as the reload is). Both are search
text for every identity, so an operator must be able to remove a wrong one: a learned request one by one, what a
model wrote for a tool all at once (that tool is then not asked about again until its description changes)."""

from collections.abc import Mapping
from typing import Any

from gateway.middleware.exposure.view import Exposure

FORGET = "POST /ui/learned/forget"


async def tab(exposure: Exposure) -> dict[str, Any]:
    """The tab's context; raises StoreUnavailable when the store cannot be read (the page says so)."""
    expansions = exposure.index.expansions
    learned = await expansions.listing()
    sampled = await expansions.sampled_listing()
    return {
        "learned": [{"tool": tool, "requests": requests} for tool, requests in learned.items()],
        "sampled": [{"key": key, **_parts(key), "requests": requests} for key, requests in sorted(sampled.items())],
    }


def _parts(key: str) -> dict[str, str]:
    """A sampled key's server, tool and description hash (`expansions.sampled_key`: `server/tool#digest`)."""
    named, _, digest = key.rpartition("#")
    server, _, tool = named.partition("/")
    return {"server": server, "tool": tool, "digest": digest}


async def forget(exposure: Exposure, form: Mapping[str, Any]) -> bool:
    """Forget what the form names, on every replica: a sampled tool's requests (`sampled`: its key), else `request`
    learned for `tool` (all of the tool's when `request` is empty)."""
    expansions = exposure.index.expansions
    if sampled := str(form.get("sampled", "")):
        return await expansions.forget_sampled(sampled)
    return await expansions.forget(str(form.get("tool", "")), str(form.get("request", "")) or None)
