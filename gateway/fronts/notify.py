"""List changes to the clients: every handshake-era session that finished its handshake hears them on its
connection, 2026-era listen streams through the audience bus. A change in what one identity's own process of a
per-user server lists (its resources, prompts) reaches only that identity's sessions and streams. A gone client is
dropped, never an error."""

import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
from mcp.server.subscriptions import PromptsListChanged, ResourcesListChanged, ToolsListChanged

from gateway.downstreams.relay import Relay
from gateway.fronts.audience import AudienceBus
from gateway.inflight import DELIVERY_S

logger = logging.getLogger(__name__)

WINDOW_S = 0.25
"""After a notice, the list changes within this long become one more notice at its end (a server may announce
thousands at once): a lone change is told at once, a flood as a few notices."""

_EVENTS: dict[str, type[ToolsListChanged | ResourcesListChanged | PromptsListChanged]] = {
    "tools": ToolsListChanged,
    "resources": ResourcesListChanged,
    "prompts": PromptsListChanged,
}


class Notifier:
    """Fans list changes out to the connected clients (triggered from sync code, while `running`)."""

    def __init__(self, relay: Relay, bus: AudienceBus) -> None:
        self.relay = relay
        """Holds the handshake-era connections that can receive pushes (one goes when the SDK lets go of it), and
        whose each is."""
        self.bus = bus
        self._tg: anyio.abc.TaskGroup | None = None
        self._closing = anyio.Event()
        """Set on leaving `running`: the open windows end."""
        self._due: dict[tuple[str, str | None], float | None] = {}
        """The (kind, audience)s in a window after their notice, and when they last changed again meanwhile (None:
        not)."""

    @asynccontextmanager
    async def running(self) -> AsyncIterator["Notifier"]:
        """Fan out while inside, in a task group of its own (outside, a change tells nobody). Leaving closes the open
        windows at once: what changed in one is told then, each delivery waited for (at most `DELIVERY_S`), and no
        window's end is waited out (every gateway's exit would wait `WINDOW_S` after its start-up's notice)."""
        async with anyio.create_task_group() as tg:
            self._tg, self._closing = tg, anyio.Event()
            try:
                yield self
            finally:
                self._tg = None
                self._closing.set()

    def list_changed(self, kind: str, audience: str | None = None) -> None:
        """Tell every client (`audience`: the clients of that identity) that the `kind` list ("tools", "resources",
        "prompts") changed: at once, or, within `WINDOW_S` of the last notice, at the end of that window (with
        every other change meanwhile)."""
        if self._tg is None:
            return
        due = (kind, audience)
        if due in self._due:
            self._due[due] = time.monotonic()
            return
        self._due[due] = None
        self._tg.start_soon(self._told, due, time.monotonic())

    async def _told(self, due: tuple[str, str | None], changed: float) -> None:
        before: float | None = changed
        try:
            while True:
                await self._broadcast(*due, before)
                with anyio.move_on_after(WINDOW_S):
                    await self._closing.wait()
                before = self._due[due]
                if before is None:
                    return
                self._due[due] = None
        finally:
            del self._due[due]

    def tools_changed(self, key: str) -> None:
        """Tell one session that its tool list changed, e.g. after a promotion.

        A handshake-era session is told alone. A 2026-era one listens on `subscriptions/listen`, whose bus
        has no per-session address: the event goes to every listener (on stdio that is the one client;
        over HTTP the others re-list and find their lists unchanged).
        """
        if self._tg is None:
            return
        listener = self.relay.connection(key)
        if listener is not None:
            self._tg.start_soon(self._notify_one, key, listener)
        else:
            self._tg.start_soon(self.bus.publish, ToolsListChanged())

    def count(self) -> int:
        """Connections that hear about list changes (one per open handshake-era session)."""
        return len(self.relay.connected())

    async def _broadcast(self, kind: str, audience: str | None, before: float | None = None) -> None:
        """Tell the clients attached before the change told (`before`; None: all of them): one that attached later
        listed after it and has the new list already (a start-up's changes are no news to its first client)."""
        for key, session in self.relay.connected(before):
            if audience is not None and self.relay.identity_of(key) != audience:
                continue
            try:
                with anyio.fail_after(DELIVERY_S):  # one client that stopped reading must not hold up the others
                    match kind:
                        case "tools":
                            await session.send_tool_list_changed()
                        case "resources":
                            await session.send_resource_list_changed()
                        case _:
                            await session.send_prompt_list_changed()
            except TimeoutError:
                logger.info("listener %s took no %s list change within %g s; it missed it", key, kind, DELIVERY_S)
            except Exception:  # noqa: BLE001 -- a gone client must not stop the others from hearing about it
                logger.debug("dropping listener %s", key)
                self.relay.detach(key)
        await self.bus.publish_to(_EVENTS[kind](), audience)

    async def _notify_one(self, key: str, listener: Any) -> None:
        try:
            with anyio.fail_after(DELIVERY_S):
                await listener.send_tool_list_changed()
        except TimeoutError:
            logger.info("listener %s took no tools list change within %g s; it missed it", key, DELIVERY_S)
        except Exception:  # noqa: BLE001 -- a gone client is dropped, as in _broadcast
            self.relay.detach(key)
