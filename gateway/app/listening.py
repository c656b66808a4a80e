"""A socket bound before a web server starts, handed to it (`uvicorn.Server.serve([sock])`).

Bound here, a port named to someone (a link, a log line) is already ours: a port probed for and bound again later can
be taken in between, and uvicorn's own failed bind exits the event loop it runs in (`sys.exit`), taking a stdio
session or a command's other work with it; an `OSError` here is the caller's to answer.
"""

import socket

BACKLOG = 2048  # uvicorn's own


def listening(host: str, port: int) -> socket.socket:
    """A TCP socket listening on `host` (a name, an IPv4 or an IPv6 address, bracketed or not) and `port` (0: any).
    Connections made before the server starts wait in the kernel's queue, to be answered once it does."""
    family, kind, proto, _, address = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restarted session's port, still in TIME_WAIT
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock
