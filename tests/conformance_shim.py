"""What the conformance suite starts for each `auth/*` client scenario: it hands the scenario to the driver in the
test's process (`tests/conformance_auth.driver`, on the Unix socket named by `CONFORMANCE_DRIVER`), which runs the
gateway there, and exits with its verdict, the driver's log on stderr (the suite keeps it in its report).

The scenario is the server's URL (the last argument) and the suite's `MCP_CONFORMANCE_*` variables. Standard library
only, started with `python -S -E`: one interpreter and no site packages, so 39 scenarios cost 39 small starts, not 39
of the SDK's imports.
"""

import json
import os
import socket
import sys


def main() -> int:
    scenario = {
        "url": sys.argv[-1],
        "env": {k: v for k, v in os.environ.items() if k.startswith("MCP_CONFORMANCE_")},
    }
    with socket.socket(socket.AF_UNIX) as driver:
        driver.connect(os.environ["CONFORMANCE_DRIVER"])
        driver.sendall(json.dumps(scenario).encode())
        driver.shutdown(socket.SHUT_WR)
        reply = json.loads(b"".join(iter(lambda: driver.recv(65536), b"")))
    sys.stderr.write(reply["log"])
    return 1 if reply["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
