"""The command a client's config runs to start this very gateway on stdio: the one that runs it now, with absolute
paths, unless that one lives in a cache.

`uvx mcp-doorway` and `pipx run mcp-doorway` run the gateway from an environment in a cache folder, which its owner
deletes when it likes (`uv cache clean` or `prune`; pipx after 14 days unused): an entry naming that folder's
`gateway` would one day stop starting, with nothing said. Such an entry runs the gateway as it was run instead —
`uv tool run --from SOURCE gateway serve` or `pipx run --spec SOURCE gateway serve`, which build the environment
again whenever it is gone — SOURCE being what it was installed from (a wheel, a folder, a git commit: PEP 610's
`direct_url.json`) or this version from the index; and the user is told, with the lasting way (an installed tool).
"""

import json
import os
import shutil
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlsplit

from gateway import __version__

DISTRIBUTION = "mcp-doorway"
LASTING = f"install it for good (`uv tool install {DISTRIBUTION}` or `pipx install {DISTRIBUTION}`) and connect again"


@dataclass(frozen=True, slots=True)
class Launch:
    command: str
    args: list[str]
    note: str | None = None  # what the user should know about this command (stderr)


def launch(config: Path | None) -> Launch:
    serve = ["serve", *(["--config", str(config.resolve())] if config is not None else [])]
    script = Path(sys.executable).parent / "gateway"  # the console script installed beside this Python
    here = Launch(str(script), serve) if script.is_file() else Launch(sys.executable, ["-m", "gateway", *serve])
    prefix = Path(sys.prefix)
    if not in_cache(prefix):
        return here
    source, uv, pipx = installed_from(), os.environ.get("UV"), shutil.which("pipx")
    if uv:  # uv names itself to what it runs
        why = f"this gateway runs from uv's cache ({prefix}), which uv may delete"
        return Launch(uv, ["tool", "run", "--from", source, "gateway", *serve], _note(why, "uv tool run"))
    if (prefix / "pipx_metadata.json").is_file() and pipx:
        why = f"this gateway runs from pipx's cache ({prefix}), which pipx deletes after 14 days unused"
        return Launch(pipx, ["run", "--spec", source, "gateway", *serve], _note(why, "pipx run"))
    why = f"this gateway runs from a cache folder ({prefix}) that may be deleted, and the entry names it"
    return Launch(here.command, here.args, f"{why}: {LASTING}")


def _note(why: str, runner: str) -> str:
    return f"{why}: the entry starts it with `{runner}`, which builds it again whenever it is gone; or {LASTING}"


def in_cache(prefix: Path) -> bool:
    """Whether `prefix` is inside a cache: a folder tagged as one (CACHEDIR.TAG, as uv's is), named `.cache` (pipx's
    under PIPX_HOME) or the user's cache home."""
    resolved = prefix.resolve()
    folders = (resolved, *resolved.parents)
    homes = [Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"), Path.home() / "Library" / "Caches"]
    return any(folder.name == ".cache" or (folder / "CACHEDIR.TAG").is_file() for folder in folders) or any(
        home.resolve() in folders for home in homes
    )


def installed_from() -> str:
    """What the running distribution was installed from, as uv's `--from` and pipx's `--spec` take it."""
    try:
        text = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
    except metadata.PackageNotFoundError:  # run from a checkout: nothing installed
        text = None
    if not text:  # from an index
        return f"{DISTRIBUTION}=={__version__}"
    direct = json.loads(text)
    url = str(direct["url"])
    if "vcs_info" in direct:
        return f"{direct['vcs_info']['vcs']}+{url}@{direct['vcs_info']['commit_id']}"
    parts = urlsplit(url)
    return unquote(parts.path) if parts.scheme == "file" else url
