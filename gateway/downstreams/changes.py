"""List-change notifications from a downstream: handshake-era pushes and 2026-era `subscriptions/listen` streams."""

import logging
from collections.abc import Callable
from typing import Any

import mcp.types as types
from mcp import Client

from gateway.errors import describe

logger = logging.getLogger(__name__)

_PUSHED = {
    types.ToolListChangedNotification: "tools",
    types.ResourceListChangedNotification: "resources",
    types.PromptListChangedNotification: "prompts",
}


def kind_of(message: Any) -> str | None:
    """ "tools", "resources" or "prompts" for a pushed list_changed notification, else None."""
    return _PUSHED.get(type(message))


async def listen(client: Client, server: str, on_changed: Callable[[str, str], None]) -> None:
    """Relay a 2026-era server's list changes until the connection ends (it has no standalone channel)."""
    caps = client.server_capabilities
    offered = {"tools": caps.tools, "resources": caps.resources, "prompts": caps.prompts}
    wanted = {kind: bool(cap and cap.list_changed) for kind, cap in offered.items()}
    if not any(wanted.values()):
        return
    try:
        async with client.listen(
            tools_list_changed=wanted["tools"],
            resources_list_changed=wanted["resources"],
            prompts_list_changed=wanted["prompts"],
        ) as subscription:
            async for event in subscription:
                on_changed(server, type(event).__name__.removesuffix("ListChanged").lower())
    except Exception as exc:  # noqa: BLE001 -- no change events is a degraded mode, not a failure
        logger.info("server %s: no list_changed subscription (%s)", server, describe(exc))
