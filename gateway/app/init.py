"""`gateway init [DIR]`: an editable starter config and a copy of the shipped workflows, to make one's own.

The starter is the embedded default (config/gateway.yaml, comments and all) pointed at the copied workflows:
what `gateway serve` runs without `--config`, now in files the user owns. Nothing existing is overwritten.
"""

import shutil
import sys
from pathlib import Path

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
    folder.mkdir(parents=True, exist_ok=True)
    config.write_text(starter_text(), encoding="utf-8")
    shutil.copyfile(shipped("config") / "versions.json", versions)
    shutil.copytree(shipped("workflows"), workflows, ignore=shutil.ignore_patterns("__pycache__"))
    count = len(list(workflows.glob("*.yaml")))
    print(  # noqa: T201
        f"wrote {config}, {versions} and {workflows}/ ({count} workflows). Next:\n"
        f"  gateway check --config {config}\n"
        f"  gateway serve --config {config}\n"
        f"  gateway connect CLIENT --config {config}   (claude-code, cursor, vscode, ...)"
    )
    return 0
