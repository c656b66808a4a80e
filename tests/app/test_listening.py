"""`gateway.app.listening`: the socket a web server is handed, bound before anyone is told its port."""

import os
import socket

import pytest

from gateway.app.listening import listening
from tests.harness import free_port


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_an_address_in_use_is_an_oserror_and_leaves_no_socket_open() -> None:
    with listening("127.0.0.1", 0) as held:
        before = open_fds()
        with pytest.raises(OSError, match="in use"):
            listening("127.0.0.1", held.getsockname()[1])
        assert open_fds() == before


def test_a_port_a_closed_server_left_in_time_wait_is_bound_again_at_once() -> None:
    """A restarted session gets its `--ui` port back while the last one's connections linger (TIME_WAIT)."""
    port = free_port()
    with listening("127.0.0.1", port) as server:
        with socket.create_connection(("127.0.0.1", port)) as client:
            accepted, _ = server.accept()
            accepted.close()  # the server closes first: its side of the connection waits out TIME_WAIT
            client.recv(1)
    with listening("127.0.0.1", port) as again:
        assert again.getsockname()[1] == port


def test_a_connection_made_before_the_server_starts_waits_in_the_queue() -> None:
    with listening("127.0.0.1", 0) as server, socket.create_connection(server.getsockname()) as early:
        accepted, _ = server.accept()  # what the server does once it starts
        with accepted:
            early.sendall(b"GET")
            assert accepted.recv(3) == b"GET"


def test_a_bracketed_ipv6_address_is_bound_as_ipv6() -> None:
    if not socket.has_ipv6:
        pytest.skip("this machine has no IPv6")
    try:
        sock = listening("[::1]", 0)
    except OSError as exc:  # IPv6 compiled in, no ::1 configured (some containers)
        pytest.skip(f"no ::1 here: {exc}")
    with sock:
        assert sock.family == socket.AF_INET6 and sock.getsockname()[0] == "::1"
