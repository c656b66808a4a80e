"""Config of what the gateway remembers per client across its sessions and connections: `clients`."""

from pydantic import Field

from gateway.config.base import ConfigModel


class ClientsConfig(ConfigModel):
    window_s: float = Field(default=1800.0, ge=0, le=7 * 86400)
    """A client is its identity and its `clientInfo.name`, not its connection or session: within this window it gets
    the driver prompt once (counted from that first contact) and keeps the tools it found (counted from its last
    promotion or listing), whether it is a 2026-era client on a new connection per call, a 2025-era one opening a
    session per call (langchain's default), or several at once; on `store.backend: redis` across replicas.
    0: per session and connection, as before (a client that reconnects is new). A restart applies a change."""
    max_clients: int = Field(default=10_000, ge=1, le=10_000_000)
    """On the local store: at most this many clients remembered (the least recently seen go first); Redis expires
    its keys by the window instead."""
