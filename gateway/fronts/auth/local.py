"""Whether an HTTP request comes from this machine: the one rule for what a gateway without auth keeps for local
callers (the page, /metrics, /reload, /healthz's details; `Authenticate` and `Admins` both ask it).

Judged on the socket's peer (uvicorn's own reading of X-Forwarded-For is off, `gateway.app.serve`), never on
what a request says about itself. A request carrying a forwarding header (Forwarded, X-Forwarded-For, X-Real-IP,
`listen.forwarded_client_header`) came through a proxy on behalf of the proxy's client, whoever that is: nginx on
this host forwarding a browser from anywhere connects from 127.0.0.1. So it is refused, unless its peer is one of
`listen.trusted_proxies`: then the headers are believed, and the client they name (the nearest hop that is not
itself a trusted proxy, read from the right) is what is judged. Every forwarding header present must name a
local client; one that cannot be read does not.
"""

import ipaddress
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network

from starlette.types import Scope

from gateway.config import ListenConfig

Address = IPv4Address | IPv6Address
FORWARDING_HEADERS = ("forwarded", "x-forwarded-for", "x-real-ip")
"""Headers a proxy adds: a request carrying one came from the proxy's client, not from the peer."""


@dataclass(frozen=True, slots=True)
class Locality:
    trusted: tuple[IPv4Network | IPv6Network, ...] = ()
    """`listen.trusted_proxies`: peers whose forwarding headers are believed."""
    client_header: str | None = None
    """`listen.forwarded_client_header` (`address:port`): a forwarding header too."""

    @classmethod
    def of(cls, listen: ListenConfig) -> "Locality":
        networks = tuple(ipaddress.ip_network(p, strict=False) for p in listen.trusted_proxies)
        return cls(networks, listen.forwarded_client_header)

    def stranger(self, scope: Scope) -> str | None:
        """None when the caller is on this machine; else who it is, for a refusal ("a caller at 203.0.113.7")."""
        peer = scope.get("client")
        host = None if peer is None else _address(str(peer[0]))
        forwarded = self._forwarding(scope)
        if not forwarded:
            if peer is None or (host is not None and host.is_loopback):  # no peer address: a Unix socket
                return None
            return f"a caller at {peer[0]}"
        if host is None or not self._trusts(host):
            return f"a request a proxy forwarded ({forwarded[0][0]} header)"
        for name, value in forwarded:
            client = self._client(_hops(name, value))
            if client is None or not client.is_loopback:
                said = str(client) if client is not None else repr(value if len(value) <= 80 else value[:77] + "...")
                return f"a caller at {said} ({name} header from the trusted proxy {host})"
        return None

    def https(self, scope: Scope) -> bool:
        """Whether the browser's own connection is HTTPS: this one's, or, from a trusted proxy, what it says in
        `X-Forwarded-Proto` or `Forwarded: proto=` (a TLS proxy in front: the page's cookie is then `Secure`)."""
        if scope.get("scheme") == "https":
            return True
        peer = scope.get("client")
        host = None if peer is None else _address(str(peer[0]))
        if host is None or not self._trusts(host):
            return False
        value: bytes
        for key, value in scope["headers"]:
            if key == b"x-forwarded-proto":
                return value.split(b",")[0].strip().lower() == b"https"
            if key == b"forwarded":
                first = value.decode("latin-1").split(",")[0]
                return any(p.strip().lower() in ("proto=https", 'proto="https"') for p in first.split(";"))
        return False

    def _forwarding(self, scope: Scope) -> list[tuple[str, str]]:
        """(header, value) of each forwarding header present, the lines of one header joined as a list."""
        names = (*FORWARDING_HEADERS, *([self.client_header.lower()] if self.client_header else []))
        found: dict[str, list[str]] = {}
        for key, value in scope["headers"]:
            name = key.decode("latin-1").lower()
            if name in names:
                found.setdefault(name, []).append(value.decode("latin-1"))
        return [(name, ", ".join(values)) for name, values in found.items()]

    def _trusts(self, host: Address) -> bool:
        return any(host in network for network in self.trusted)

    def _client(self, hops: list[Address | None]) -> Address | None:
        """The client the hops name: from the nearest, the first that is no trusted proxy (the first hop if all
        are); None for a hop that cannot be read (`unknown`, an obfuscated name, garbage)."""
        for hop in reversed(hops):
            if hop is None or not self._trusts(hop):
                return hop
        return hops[0] if hops else None


def _hops(name: str, value: str) -> list[Address | None]:
    """The addresses a forwarding header names, farthest first."""
    if name == "forwarded":  # RFC 7239: `for=192.0.2.43;proto=https, for="[2001:db8::1]:4711"`
        return [_address(_for(element)) for element in value.split(",")]
    return [_address(part) for part in value.split(",")]


def _for(element: str) -> str:
    for pair in element.split(";"):
        key, _, token = pair.strip().partition("=")
        if key.strip().lower() == "for":
            return token
    return ""


def _address(text: str) -> Address | None:
    """An IP address from `192.0.2.1`, `192.0.2.1:80`, `[2001:db8::1]:80`, `2001:db8::1`, quoted or not."""
    text = text.strip().strip('"')
    if text.startswith("["):
        text = text[1 : text.find("]")] if "]" in text else ""
    elif text.count(":") == 1:
        text = text.partition(":")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    # A dual-stack socket reports an IPv4 peer as ::ffff:a.b.c.d, which Python 3.11 does not call loopback.
    mapped = address.ipv4_mapped if isinstance(address, IPv6Address) else None
    return mapped or address
