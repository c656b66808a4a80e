"""`gateway.app.listening`: the sockets a web server is handed, listening before anyone is told their port."""

import os
import socket
from typing import Any

import pytest

from gateway.app.listening import listening
from tests.harness import free_port


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_an_address_in_use_is_an_oserror_and_leaves_no_socket_open() -> None:
    with listening("127.0.0.1", 0) as held:
        before = open_fds()
        with pytest.raises(OSError, match="in use"), listening("127.0.0.1", held[0].getsockname()[1]):
            pass
        assert open_fds() == before


def test_the_sockets_are_closed_at_the_end() -> None:
    before = open_fds()
    with listening("127.0.0.1", 0) as sockets:
        assert open_fds() == before + 1
    assert open_fds() == before and sockets[0].fileno() == -1


def test_a_port_a_closed_server_left_in_time_wait_is_bound_again_at_once() -> None:
    """A restarted session gets its `--ui` port back while the last one's connections linger (TIME_WAIT)."""
    port = free_port()
    with listening("127.0.0.1", port) as (server,), socket.create_connection(("127.0.0.1", port)) as client:
        accepted, _ = server.accept()
        accepted.close()  # the server closes first: its side of the connection waits out TIME_WAIT
        client.recv(1)
    with listening("127.0.0.1", port) as (again,):
        assert again.getsockname()[1] == port


def test_a_connection_made_before_the_server_starts_waits_in_the_queue() -> None:
    with listening("127.0.0.1", 0) as (server,), socket.create_connection(server.getsockname()) as early:
        accepted, _ = server.accept()  # what the server does once it starts
        with accepted:
            early.sendall(b"GET")
            assert accepted.recv(3) == b"GET"


def ipv6_loopback() -> None:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError as exc:  # IPv6 compiled out, or no ::1 configured (some containers)
        pytest.skip(f"no ::1 here: {exc}")


def test_a_bracketed_ipv6_address_is_bound_as_ipv6() -> None:
    ipv6_loopback()
    with listening("[::1]", 0) as (sock,):
        assert sock.family == socket.AF_INET6 and sock.getsockname()[0] == "::1"


def test_a_name_of_two_addresses_listens_on_both_at_one_port_even_when_the_system_chooses_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`localhost` is ::1 and 127.0.0.1 on many machines (this one's resolver says 127.0.0.1 only: told both here)."""
    ipv6_loopback()
    resolve = socket.getaddrinfo

    def both(host: str, port: int, *args: Any, **kwargs: Any) -> list[Any]:
        return resolve("::1", port, *args, **kwargs) + resolve("127.0.0.1", port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", both)
    with listening("localhost", 0) as sockets:
        port = sockets[0].getsockname()[1]
        assert [sock.getsockname()[:2] for sock in sockets] == [("::1", port), ("127.0.0.1", port)]
        for address in ("::1", "127.0.0.1"):
            socket.create_connection((address, port)).close()  # both answer (the kernel queues it)
