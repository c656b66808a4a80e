"""The sockets a web server is handed (`uvicorn.Server.serve(sockets)`), listening before anyone is told the port.

Bound here, a port named to someone (a link, a log line) is already ours: a port probed for and bound again later can
be taken in between, and uvicorn's own failed bind exits the event loop it runs in (`sys.exit`), taking a stdio
session or a command's other work with it; an `OSError` here is the caller's to answer.
"""

import socket
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

BACKLOG = 2048  # uvicorn's own


@contextmanager
def listening(host: str, port: int) -> Iterator[list[socket.socket]]:
    """A TCP socket listening on each address `host` names (a name, an IPv4 or an IPv6 address, bracketed or not:
    `localhost` may be both ::1 and 127.0.0.1, as uvicorn would serve it) at `port` (0: one the system chooses, the
    same for every address), closed at the end. Connections made before the server starts wait in the kernel's
    queue, to be answered once it does."""
    found = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
    with ExitStack() as closing:
        sockets: list[socket.socket] = []
        for family, kind, proto, _, address in dict.fromkeys(found):  # the same address once
            sock = closing.enter_context(socket.socket(family, kind, proto))
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restarted session's port, in TIME_WAIT
            if family == socket.AF_INET6:  # beside an IPv4 socket on the same port, as asyncio binds them
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind((address[0], sockets[0].getsockname()[1], *address[2:]) if sockets else address)
            sock.listen(BACKLOG)
            sockets.append(sock)
        yield sockets
