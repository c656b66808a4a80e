"""Exposed resource URIs: `<server>+<original URI>`, the hosted schemes, and un-prefixed servers.

`+` is legal in a URI scheme, so an exposed URI is still a URI, and the mapping is reversible. The
gateway's in-process servers own a scheme each and keep their URIs; a server configured with
`prefix: false` keeps its URIs too (at most one such server, so the owner of a bare URI is known).
"""

from collections.abc import Collection

URI_SEP = "+"
HOSTED_SCHEMES = {"gateway://": "gateway", "workflow://": "think"}
"""The gateway's in-process servers own a URI scheme each: their resources keep their URIs."""


def hosted_server(uri: str) -> str | None:
    return next((server for scheme, server in HOSTED_SCHEMES.items() if uri.startswith(scheme)), None)


class Uris:
    """Maps URIs between the client's view and each server's own, given the known servers."""

    def __init__(self, servers: Collection[str], bare: str | None = None) -> None:
        self.servers = servers
        self.bare = bare
        """The server whose names are not prefixed (config `prefix: false`), if any."""

    def exposed(self, server: str, uri: str) -> str:
        if server == self.bare or hosted_server(uri) == server:
            return uri
        return f"{server}{URI_SEP}{uri}"

    def owner(self, uri: str) -> tuple[str, str] | None:
        """(server, original URI) for an exposed URI, or None when no server owns it."""
        hosted = hosted_server(uri)
        if hosted is not None:
            return hosted, uri
        server, sep, original = uri.partition(URI_SEP)
        if sep and original and server in self.servers and server != self.bare:
            return server, original
        if self.bare is not None:
            return self.bare, uri
        return None
