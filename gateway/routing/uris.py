"""Exposed resource URIs: `<server>+<original URI>`, `ui://<server>+…` for MCP Apps, the hosted schemes, and
un-prefixed servers.

`+` is legal in a URI scheme, so an exposed URI is still a URI, and the mapping is reversible. An MCP App's
resource (`ui://`, extension `io.modelcontextprotocol/ui`) keeps its scheme, since hosts render only `ui://`
URIs (the extension's own `getToolUiResourceUri` throws on any other): the server goes in front of the rest,
`ui://weather/view.html` -> `ui://<server>+weather/view.html` (`+` is legal in a URI's authority too). The
gateway's in-process servers own a scheme each and keep their URIs; a server configured with `prefix: false`
keeps its URIs too (at most one such server, so the owner of a bare URI is known).
"""

from collections.abc import Collection

URI_SEP = "+"
UI_SCHEME = "ui://"
"""MCP Apps' resources (SEP-1865: "URI MUST start with `ui://`")."""
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
        if uri.startswith(UI_SCHEME):
            return f"{UI_SCHEME}{server}{URI_SEP}{uri.removeprefix(UI_SCHEME)}"
        return f"{server}{URI_SEP}{uri}"

    def owner(self, uri: str) -> tuple[str, str] | None:
        """(server, original URI) for an exposed URI, or None when no server owns it."""
        hosted = hosted_server(uri)
        if hosted is not None:
            return hosted, uri
        scheme, rest = (UI_SCHEME, uri.removeprefix(UI_SCHEME)) if uri.startswith(UI_SCHEME) else ("", uri)
        server, sep, original = rest.partition(URI_SEP)
        if sep and original and server in self.servers and server != self.bare:
            return server, scheme + original
        if self.bare is not None:
            return self.bare, uri
        return None
