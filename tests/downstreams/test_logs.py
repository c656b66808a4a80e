"""The levels sessions ask for: a server shared by all of them is asked for the most verbose, and a session
that ended stops counting (routing and pace are proven end to end in tests/downstreams/relay and
tests/fronts/test_notify.py)."""

from gateway.downstreams.logs import Logs
from gateway.downstreams.relay import Relay


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
    relay.logs.set_level("ann|1", "info", "ann")
    relay.forget("ann|1")
    assert (relay.connection("ann|1"), relay.connected(), relay.logs.level("ann|1")) == (None, [], None)
