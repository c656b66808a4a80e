"""The peers' bench-only environments: mcp-proxy and FastMCP, each in its own venv under `.bench-envs/`.

Neither is a dependency of the gateway, and they cannot share the project's venv: mcp-proxy needs
mcp < 2. Each venv is installed from its pinned requirements file (`bench/peers-<name>.txt`) and
re-installed only when that file changes (a stamp named after its hash), so a second run starts at once.
"""

import hashlib
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.harness import ROOT

ENVS = ROOT / ".bench-envs"
BENCH = ROOT / "bench"


@dataclass(frozen=True)
class PeerEnv:
    name: str

    @property
    def requirements(self) -> Path:
        return BENCH / f"peers-{self.name}.txt"

    @property
    def path(self) -> Path:
        return ENVS / self.name

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    def executable(self, name: str) -> Path:
        return self.path / "bin" / name

    def _stamp(self) -> Path:
        digest = hashlib.sha256(self.requirements.read_bytes()).hexdigest()[:16]
        return self.path / f".installed-{digest}"

    def ensure(self) -> None:
        """Create and install the venv unless the stamp of the current requirements is there.

        Raises:
            RuntimeError: the venv could not be created or installed; names the command and its output.
        """
        stamp = self._stamp()
        if stamp.exists():
            return
        print(f"[setup] installing {self.name} into {self.path} (once; pinned in {self.requirements.name})", flush=True)
        if not self.python.exists():
            _run([sys.executable, "-m", "venv", str(self.path)])
        _run([str(self.python), "-m", "pip", "install", "-q", "-r", str(self.requirements)])
        for old in self.path.glob(".installed-*"):
            old.unlink()
        stamp.touch()


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise RuntimeError(f"{' '.join(argv)} failed with exit code {done.returncode}: {' | '.join(tail)}")


MCP_PROXY = PeerEnv("mcp-proxy")
FASTMCP = PeerEnv("fastmcp")
