"""Who is on this machine (fronts/auth/local.py): judged on the socket's peer; a forwarding header refuses unless
the peer is a trusted proxy, whose headers then name the client that is judged."""

import pytest

from gateway.config import ListenConfig
from gateway.fronts.auth.local import Locality

TRUSTING = Locality.of(ListenConfig(trusted_proxies=["127.0.0.1", "10.0.0.0/8"]))


def scope(peer: tuple[str, int] | None, *headers: tuple[str, str]) -> dict[str, object]:
    raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]  # as ASGI servers pass them
    return {"type": "http", "method": "GET", "path": "/ui/calls", "headers": raw, "client": peer}


@pytest.mark.parametrize(
    "peer",
    [("203.0.113.7", 50000), ("10.1.2.3", 50000), ("2001:db8::1", 50000), ("testclient", 50000)],
)
def test_a_peer_not_on_loopback_is_a_stranger_whatever_it_says(peer: tuple[str, int]) -> None:
    assert Locality().stranger(scope(peer)) == f"a caller at {peer[0]}"
    assert Locality().stranger(scope(peer, ("x-forwarded-for", "127.0.0.1"))) is not None  # its say-so is nothing


@pytest.mark.parametrize("peer", [("127.0.0.1", 1), ("127.8.9.10", 1), ("::1", 1), ("::ffff:127.0.0.1", 1), None])
def test_a_loopback_peer_or_a_unix_socket_without_forwarding_headers_is_local(peer: tuple[str, int] | None) -> None:
    assert Locality().stranger(scope(peer)) is None


@pytest.mark.parametrize(
    "header",
    [
        ("X-Forwarded-For", "203.0.113.7"),
        ("X-Forwarded-For", "127.0.0.1"),  # a proxy's client on this host: still not believed without the config
        ("Forwarded", "for=203.0.113.7"),
        ("X-Real-IP", "203.0.113.7"),
        ("X-Balancer-Client", "203.0.113.7:4242"),
    ],
)
def test_any_forwarding_header_from_an_untrusted_peer_is_refused(header: tuple[str, str]) -> None:
    locality = Locality(client_header="X-Balancer-Client")
    who = locality.stranger(scope(("127.0.0.1", 1), header))
    assert who == f"a request a proxy forwarded ({header[0].lower()} header)"


@pytest.mark.parametrize(
    ("headers", "local"),
    [
        ([("X-Forwarded-For", "127.0.0.1")], True),
        ([("X-Forwarded-For", "::1")], True),
        ([("Forwarded", 'for="[::1]:4711";proto=https')], True),
        ([("X-Real-IP", "127.0.0.1")], True),
        ([("X-Forwarded-For", "203.0.113.7")], False),
        ([("X-Forwarded-For", "127.0.0.1, 203.0.113.7")], False),  # the client wrote the first, nginx the last
        ([("X-Forwarded-For", "203.0.113.7, 10.0.0.5")], False),  # through two trusted hops: the first untrusted
        ([("X-Forwarded-For", "127.0.0.1, 10.0.0.5")], True),
        ([("Forwarded", "for=unknown")], False),
        ([("Forwarded", "for=127.0.0.1, for=10.0.0.5")], True),
        ([("Forwarded", "for=_hidden, for=127.0.0.1")], False),  # past a trusted hop, a client that cannot be read
        ([("Forwarded", "for=127.0.0.1, for=_hidden")], False),
        ([("X-Forwarded-For", "127.0.0.1"), ("X-Real-IP", "203.0.113.7")], False),  # every header must agree
        ([("X-Forwarded-For", "127.0.0.1"), ("X-Forwarded-For", "203.0.113.7")], False),  # lines joined
        ([("X-Forwarded-For", "garbage")], False),
        ([("X-Forwarded-For", "::ffff:127.0.0.1")], True),  # an IPv4 client as a dual-stack proxy writes it
    ],
)
def test_a_trusted_proxys_headers_name_the_client_that_is_judged(headers: list[tuple[str, str]], local: bool) -> None:
    who = TRUSTING.stranger(scope(("127.0.0.1", 1), *headers))
    assert (who is None) is local, who


def test_a_trusted_proxy_elsewhere_is_believed_and_its_client_judged() -> None:
    assert TRUSTING.stranger(scope(("10.0.0.5", 1), ("X-Forwarded-For", "127.0.0.1"))) is None
    who = TRUSTING.stranger(scope(("10.0.0.5", 1), ("X-Forwarded-For", "203.0.113.7")))
    assert who == "a caller at 203.0.113.7 (x-forwarded-for header from the trusted proxy 10.0.0.5)"
    assert TRUSTING.stranger(scope(("10.0.0.5", 1))) == "a caller at 10.0.0.5"  # without headers: the proxy itself


def test_trusted_proxies_must_be_addresses_or_networks() -> None:
    with pytest.raises(ValueError, match="'nginx' is not an IP address or network"):
        ListenConfig(trusted_proxies=["nginx"])


@pytest.mark.parametrize(
    ("peer", "headers", "https"),
    [
        (("127.0.0.1", 1), [("X-Forwarded-Proto", "https")], True),
        (("10.0.0.5", 1), [("Forwarded", "for=127.0.0.1;proto=https")], True),
        (("127.0.0.1", 1), [("X-Forwarded-Proto", "http")], False),
        (("203.0.113.7", 1), [("X-Forwarded-Proto", "https")], False),  # not a trusted proxy: its say-so is nothing
        (("127.0.0.1", 1), [], False),
    ],
)
def test_a_trusted_proxy_says_whether_the_browser_came_over_https(
    peer: tuple[str, int], headers: list[tuple[str, str]], https: bool
) -> None:
    assert TRUSTING.https(scope(peer, *headers)) is https
    assert Locality().https(scope(peer, *headers)) is False  # nobody trusted
    assert Locality().https({**scope(peer), "scheme": "https"}) is True  # its own TLS
