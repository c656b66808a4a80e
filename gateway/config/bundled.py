"""Where the shipped workflows, driver prompts and default config are, from a checkout and installed alike.

In a checkout they are the top-level `workflows/`, `prompts/` and `config/` (DESIGN §3). The wheel carries the
same folders as `gateway/bundled/` (pyproject.toml's force-include), since a site-packages has no top level of
its own to put them in. The installed copy wins when it exists: a checkout never has `gateway/bundled/`.
"""

import os
from pathlib import Path
from typing import Literal

_PACKAGE = Path(__file__).resolve().parent.parent  # the `gateway` package


def shipped(name: Literal["workflows", "prompts", "config"]) -> Path:
    """The folder `name` as shipped with this gateway."""
    installed = _PACKAGE / "bundled" / name
    return installed if installed.is_dir() else _PACKAGE.parent / name


def default_config() -> Path:
    """The embedded default config: `gateway serve` without `--config` serves it."""
    return shipped("config") / "gateway.yaml"


def data_home() -> Path:
    """Where the embedded default writes (spilled outputs, Think runs): `$GATEWAY_DATA` when set, else the
    per-user state folder (XDG). An installed package's own folder may be read-only, so never there."""
    if explicit := os.environ.get("GATEWAY_DATA"):
        return Path(explicit)
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "mcp-doorway"


def envs_home() -> Path:
    """Where `package:` and `npm:` servers get their environments: `$GATEWAY_ENVS` when set (the test lab's
    `.envs`), else `envs/` in `data_home()`."""
    if explicit := os.environ.get("GATEWAY_ENVS"):
        return Path(explicit)
    return data_home() / "envs"
