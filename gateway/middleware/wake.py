"""Per-user servers at the front door (first in the chain): before a listing, or a call of one of their tools,
start the caller's own process of any such server that has none, so its tools are in the catalog.

A call that needs a secret the caller lacks is refused here, naming the secret and how to provide it.
"""

from collections.abc import Awaitable, Callable

from gateway.pipeline import Call, Middleware

Wake = Callable[[Call, str | None], Awaitable[bool]]


class WakePools(Middleware):
    name = "wake"
    methods = frozenset({"tools/list", "tools/call"})

    def __init__(self, wake: Wake) -> None:
        self.wake = wake

    async def on_request(self, call: Call) -> None:
        await self.wake(call, str(call.params.get("name", "")) if call.method == "tools/call" else None)
