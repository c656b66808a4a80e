"""`gateway init [DIR]`: an editable starter config and a copy of the shipped workflows, to make one's own.

The starter is the embedded default (config/gateway.yaml, comments and all) pointed at the copied workflows:
what `gateway serve` runs without `--config`, now in files the user owns. Nothing existing is overwritten, and
nothing is left half-made: the files are written whole (`userfile`), the workflows copied into a hidden folder that
is renamed into place last, and on any failure (a full disk, a file-size limit, a folder that cannot be written)
what this run made is removed again and one line says why.
"""

import secrets
import shutil
import sys
from pathlib import Path

from gateway.app import userfile
from gateway.config.bundled import default_config, shipped

_ANCHOR = "think:\n  enabled: true\n"
_WORKFLOWS = "  workflows_dirs: [workflows]    # the copies beside this file: edit them, add your own\n"


def starter_text() -> str:
    text = default_config().read_text(encoding="utf-8")
    if text.count(_ANCHOR) != 1:  # config/gateway.yaml was reshaped: init must be taught where Think starts
        raise RuntimeError(f"{default_config()}: expected one {_ANCHOR!r} block to add workflows_dirs to")
    return text.replace(_ANCHOR, _ANCHOR + _WORKFLOWS)


def init(folder: Path) -> int:
    config, versions, workflows = folder / "gateway.yaml", folder / "versions.json", folder / "workflows"
    existing = [str(p) for p in (config, versions, workflows) if p.exists()]
    if existing:
        print(  # noqa: T201 -- the CLI's output
            f"gateway init: {', '.join(existing)} already exist(s); init writes only new files. "
            "Move them away or pick another folder: gateway init DIR",
            file=sys.stderr,
        )
        return 1
    try:
        _write(config, versions, workflows)
    except (OSError, userfile.FileRefused) as exc:
        print(f"gateway init: {_said(exc)}", file=sys.stderr)  # noqa: T201
        return 1
    count = len(list(workflows.glob("*.yaml")))
    print(  # noqa: T201
        f"wrote {config}, {versions} and {workflows}/ ({count} workflows). Next:\n"
        f"  gateway check --config {config}\n"
        f"  gateway serve --config {config}\n"
        f"  gateway connect CLIENT --config {config}   (claude-code, cursor, vscode, ...)"
    )
    return 0


def _write(config: Path, versions: Path, workflows: Path) -> None:
    workflows.parent.mkdir(parents=True, exist_ok=True)
    staging = workflows.with_name(f".{workflows.name}.{secrets.token_hex(4)}.tmp")
    made: list[Path] = []
    try:
        staging.mkdir()  # the user's default mode, as `workflows` should have
        shutil.copytree(shipped("workflows"), staging, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
        for path, text in (
            (versions, (shipped("config") / "versions.json").read_text("utf-8")),
            (config, starter_text()),
        ):
            userfile.write(userfile.read(path), text)
            made.append(path)
        staging.rename(workflows)
    except BaseException:
        for path in made:
            path.unlink(missing_ok=True)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # gone once renamed


def _said(exc: BaseException) -> str:
    """One line: a failed copy of the workflows (`shutil.Error`) carries a list of every file's error."""
    if isinstance(exc, shutil.Error) and exc.args and isinstance(exc.args[0], list) and exc.args[0]:
        source, target, why = exc.args[0][0]
        return f"cannot copy {source} to {target}: {why}; nothing was written"
    if isinstance(exc, OSError):
        where = f" {exc.filename}" if exc.filename else ""
        return f"cannot write{where}: {exc.strerror or exc}; nothing was written"
    return str(exc)
