"""What runs a configured server: one shared, supervised connection; or, when its config reads a user's secret,
a pool of per-identity processes (nothing is started here: building a runner connects nothing)."""

from pydantic import TypeAdapter

from gateway.app.servers import Servers
from gateway.config import ServerConfig
from gateway.config.teams import SecretsConfig
from gateway.downstreams import secrets
from gateway.downstreams.downstream import Downstream
from gateway.downstreams.pool import Pool
from gateway.downstreams.relay import Relay


async def _updated(*_: object) -> None:
    return None


def _changed(server: str, kind: str, audience: str | None = None) -> None:
    return None


def servers() -> Servers:
    relay = Relay(logger_name=lambda server, name: server)
    return Servers(relay, secrets.from_config(SecretsConfig()), lambda: 1_000_000, _changed, _updated)


def config(**fields: object) -> ServerConfig:
    return TypeAdapter(ServerConfig).validate_python({"transport": "stdio", "command": "true", **fields})


def test_a_server_that_reads_no_users_secret_is_one_supervised_connection_with_its_own_limits() -> None:
    built = servers()("git", config(timeout_s=12, connect_timeout_s=3))
    assert isinstance(built, Downstream)
    assert (built.name, built.timeout_s, built.state.value) == ("git", 12, "starting")


def test_a_server_that_reads_a_users_secret_is_a_pool_of_per_identity_processes() -> None:
    built = servers()("gitlab", config(env={"GITLAB_TOKEN": "${user:GITLAB_TOKEN}"}))
    assert isinstance(built, Pool)
