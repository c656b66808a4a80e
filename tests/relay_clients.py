"""A client of the relay tests (DESIGN §15): real `mcp.Client` callbacks that answer with the person's name and
remember what they were asked and told."""

from typing import Any

import anyio
import mcp.types as types
from mcp.client.session import ClientRequestContext


class Person:
    """One client's callbacks: answers elicitation, sampling and roots with its own name, remembers what it was
    asked (`asked`: the messages; `elicitations`: the whole requests) and told (logs, updates, completions)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.asked: list[str] = []
        self.elicitations: list[types.ElicitRequestParams] = []
        self.logs: list[types.LoggingMessageNotificationParams] = []
        self.updated: list[str] = []
        self.completed: list[str] = []
        self.got_update = anyio.Event()

    async def elicit(self, ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params.message)
        self.elicitations.append(params)
        if isinstance(params, types.ElicitRequestURLParams):  # out of band: nothing to fill in
            return types.ElicitResult(action="accept")
        return types.ElicitResult(action="accept", content={"response": self.name})

    async def sample(self, ctx: ClientRequestContext, params: types.CreateMessageRequestParams) -> Any:
        self.asked.append(str(params.messages[0].content))
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text=self.name), model="m")

    async def roots(self, ctx: ClientRequestContext) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=f"file:///work/{self.name}", name=self.name)])

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    async def message(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.updated.append(message.params.uri)
            self.got_update.set()
        elif isinstance(message, types.ElicitCompleteNotification):
            self.completed.append(message.params.elicitation_id)

    def callbacks(self) -> dict[str, Any]:
        return {
            "elicitation_callback": self.elicit,
            "sampling_callback": self.sample,
            "list_roots_callback": self.roots,
            "logging_callback": self.log,
            "message_handler": self.message,
        }
