"""The page's view of what `find_tools` learned from use (DESIGN §14): every replica's learned requests per tool,
and for an administrator a button that forgets one (`POST /ui/learned/forget`, an Origin-checked form as the reload
is): a learned request is search text for every identity, so an operator must be able to take a wrong one back."""

from typing import Any

from gateway.middleware.exposure.view import Exposure

FORGET = "POST /ui/learned/forget"


async def tab(exposure: Exposure) -> dict[str, Any]:
    """The tab's context; raises StoreUnavailable when the store cannot be read (the page says so)."""
    learned = await exposure.index.expansions.listing()
    return {"learned": [{"tool": tool, "requests": requests} for tool, requests in learned.items()]}


async def forget(exposure: Exposure, tool: str, request: str) -> bool:
    """Forget `request` of `tool` (all of the tool's when `request` is empty) on every replica."""
    return await exposure.index.expansions.forget(tool, request or None)
