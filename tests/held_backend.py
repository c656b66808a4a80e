"""The PEP 517 build backend of the `heldpkg` sdist `tests.held_install` writes: its `build_wheel` reports its pid to
the test over TCP and waits for the test's word, so an install can be held mid-build (pip and uv run the backend
in a subprocess of their own: a grandchild of the gateway). On "go" it builds a wheel whose `heldpkg` program
starts the kitchen test server; anything else, or a closed connection, fails the build.

Copied into the sdist beside `held.json` (the test's address, the Python and the kitchen server to run); runs
under the new venv's interpreter, so the standard library only.
"""

import base64
import hashlib
import json
import os
import socket
import stat
import zipfile
from pathlib import Path
from typing import Any

NAME, VERSION = "heldpkg", "1.0"


def get_requires_for_build_wheel(config_settings: Any = None) -> list[str]:
    return []


def build_wheel(wheel_directory: str, config_settings: Any = None, metadata_directory: Any = None) -> str:
    held = json.loads((Path(__file__).parent / "held.json").read_text())
    with socket.create_connection(("127.0.0.1", held["port"])) as test, test.makefile("rw") as talk:
        talk.write(f"{os.getpid()}\n")
        talk.flush()
        word = talk.readline()
    if word != "go\n":
        raise SystemExit(f"the test ended the hold with {word!r}")
    run = [held["python"], held["kitchen"], "--name", "held"]
    files = {
        f"{NAME}/__init__.py": "",
        f"{NAME}-{VERSION}.data/scripts/{NAME}": f"#!python\nimport os\nos.execv({run[0]!r}, {run!r})\n",
        f"{NAME}-{VERSION}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n",
        f"{NAME}-{VERSION}.dist-info/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [f"{path},sha256={_digest(text.encode())},{len(text.encode())}" for path, text in files.items()]
    files[f"{NAME}-{VERSION}.dist-info/RECORD"] = "\n".join([*record, f"{NAME}-{VERSION}.dist-info/RECORD,,", ""])
    wheel = f"{NAME}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(Path(wheel_directory) / wheel, "w") as archive:
        for path, text in files.items():
            entry = zipfile.ZipInfo(path)
            entry.external_attr = (stat.S_IFREG | 0o755) << 16  # pip installs a file executable when it is so here
            archive.writestr(entry, text)
    return wheel


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
