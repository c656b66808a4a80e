"""The levels sessions ask for: a server shared by all of them is asked for the most verbose, and a session
that ended stops counting; a client that stopped reading holds nobody up; the notice that a flood is being
dropped never arrives below the level a session asked for (routing and pace are proven end to end in
tests/downstreams/relay and tests/downstreams/test_throttle.py)."""

from typing import Any

import anyio
import mcp.types as types
import pytest

from gateway import inflight
from gateway.downstreams.logs import Logs
from gateway.downstreams.relay import Relay

pytestmark = pytest.mark.anyio


def test_a_shared_server_is_asked_for_the_most_verbose_level_of_the_sessions_still_there() -> None:
    logs = Logs(lambda server, logger: f"{server}.{logger}")
    assert logs.set_level("a", "warning") == "warning"
    assert logs.set_level("b", "debug") == "debug"
    assert (logs.level("a"), logs.level("b")) == ("warning", "debug")
    logs.forget("b")
    assert logs.level("b") is None
    assert logs.set_level("a", "error") == "error"


class Connection:
    """Stands for the SDK's connection object: the relay holds it weakly and sends it nothing here."""


def test_a_session_the_relay_forgets_leaves_no_connection_behind() -> None:
    relay = Relay(logger_name=lambda server, logger: server)
    connection = Connection()
    relay.attach("ann|1", connection)
    relay.logs.set_level("ann|1", "info")
    relay.forget("ann|1")
    assert (relay.connection("ann|1"), relay.connected(), relay.logs.level("ann|1")) == (None, [], None)


class Recording(Connection):
    def __init__(self) -> None:
        self.got: list[str] = []

    async def notify(self, method: str, params: dict[str, Any] | None) -> None:
        self.got.append(method)


class Stalled(Connection):
    async def notify(self, method: str, params: dict[str, Any] | None) -> None:
        await anyio.sleep_forever()  # a client that stopped reading: the SDK's send waits for room


async def test_a_client_that_stopped_reading_holds_up_neither_the_server_nor_the_other_sessions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(inflight, "DELIVERY_S", 0.2)
    relay = Relay(logger_name=lambda server, logger: server)
    stalled, other = Stalled(), Recording()
    for key, connection in (("stalled|1", stalled), ("other|1", other)):
        relay.attach(key, connection, key.split("|")[0])
        relay.logs.set_level(key, "info")
    log = relay.callbacks("shared", 5.0)["logging_callback"]  # called from the server connection's reader
    with anyio.fail_after(10):
        for _ in range(2):
            await log(types.LoggingMessageNotificationParams(level="info", data="hello"))
    assert other.got == ["notifications/message"] * 2


class Kept(Connection):
    """Keeps the (level, logger) of every log notification it is sent."""

    def __init__(self) -> None:
        self.logs: set[tuple[str, str]] = set()

    async def notify(self, method: str, params: dict[str, Any] | None) -> None:
        assert method == "notifications/message" and params is not None
        self.logs.add((params["level"], params["logger"]))


async def test_the_notice_of_dropped_logs_respects_the_level_each_session_asked_for() -> None:
    logs = Logs(lambda server, logger: f"{server}.{logger}")
    levels: list[types.LoggingLevel] = ["debug", "info", "error"]
    sessions: dict[str, Kept] = {level: Kept() for level in levels}  # each keyed by the level it asked for
    for level in levels:
        logs.set_level(level, level)
    for _ in range(logs.throttle.per_s + 5):  # a flood of errors outside any call: to every session that set a level
        message = types.LoggingMessageNotificationParams(level="error", logger="db", data="x")
        await logs.route("f", message, [], sessions.get, lambda key: None)
    assert sessions["debug"].logs == sessions["info"].logs == {("error", "f.db"), ("warning", "gateway")}
    assert sessions["error"].logs == {("error", "f.db"), ("error", "gateway")}  # told, never below its level
