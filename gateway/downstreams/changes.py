"""List-change notifications from a downstream: handshake-era pushes and 2026-era `subscriptions/listen` streams."""

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.abc
import mcp.types as types
from mcp import Client
from mcp.shared.subscriptions import ResourceUpdated

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


async def watch(
    client: Client,
    server: str,
    uri: str,
    on_updated: Callable[[str, str], Awaitable[None]],
    *,
    task_status: anyio.abc.TaskStatus[anyio.CancelScope],
) -> None:
    """Relay a 2026-era server's updates of one resource; started once the stream is acknowledged.

    A failure before the acknowledgement reaches the subscriber; a stream lost later ends the subscription.
    """
    with anyio.CancelScope() as scope:
        async with client.listen(resource_subscriptions=[uri]) as subscription:
            task_status.started(scope)
            try:
                async for event in subscription:
                    if isinstance(event, ResourceUpdated):
                        await on_updated(server, event.uri)
            except Exception as exc:  # noqa: BLE001 -- a lost stream ends the subscription, never the connection
                logger.info("server %s: resource subscription to %s ended (%s)", server, uri, describe(exc))
