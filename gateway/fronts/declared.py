"""The SDK server as the gateway declares itself at the handshake: every list change announced, and (where
`fronts.tasks_wire` installed them) tasks."""

from typing import Any

import mcp.types as types
from mcp.server import NotificationOptions, Server

from gateway.fronts import tasks_offer


class GatewayServer(Server[Any]):
    offers_tasks = False
    """Set by `fronts.tasks_wire.install`: handshake-era clients are told the gateway runs tool calls as tasks."""

    def get_capabilities(self, *args: Any, **kwargs: Any) -> types.ServerCapabilities:
        capabilities = super().get_capabilities(*args, **kwargs)
        return tasks_offer.declared(capabilities, kwargs.get("protocol_version")) if self.offers_tasks else capabilities

    # The HTTP session manager builds InitializationOptions without NotificationOptions, which would
    # advertise listChanged=false to handshake-era HTTP clients although we do send the notifications.
    def create_initialization_options(
        self, notification_options: NotificationOptions | None = None, *args: Any, **kwargs: Any
    ) -> Any:
        options = notification_options or NotificationOptions(
            tools_changed=True, resources_changed=True, prompts_changed=True
        )
        return super().create_initialization_options(options, *args, **kwargs)
