"""Which shipped expansion packs still match the tools a config's servers list (config/expansions/, DESIGN §14).

Usage, from the repository root: `.venv/bin/python -m bench.expansion_packs [--config config/examples/gitlab-jira.yaml]`
(the GitLab/Jira example lists its tools with dummy credentials: GITLAB_URL=https://gitlab.example.com and so on).

Starts the config's servers, lists their tools and prints, per server, how many tools have a pack entry written for
their current description, and names the others: a tool whose description changed (a new server version) has no
expansions until its entry is written again from the new text, by the same rule (the tool's own name, description
and parameters only; never a labelled query), with the new `description_sha256`.
"""

import argparse
from collections import defaultdict
from pathlib import Path

import anyio
import mcp.types as types

from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.config.bundled import default_config
from gateway.middleware.exposure.expansions import description_hash, expansions_for
from gateway.middleware.exposure.listed import OWN_SERVERS


async def report(config: Path) -> int:
    gateway = Gateway(load_config(config))
    async with gateway.running():
        catalog = await gateway.registry.catalog()
    missing: defaultdict[str, list[str]] = defaultdict(list)
    counted: defaultdict[str, int] = defaultdict(int)
    for entry in catalog.tools.values():
        if entry.server in OWN_SERVERS or not isinstance(entry.item, types.Tool):
            continue
        counted[entry.server] += 1
        description = entry.item.description or ""
        if not expansions_for(entry.server, entry.exposed, description):
            missing[entry.server].append(f"{entry.original} (description_sha256 {description_hash(description)})")
    for server, n in sorted(counted.items()):
        absent = missing.get(server, [])  # not missing[server]: a key made here would fail the exit status below
        print(f"{server}: {n - len(absent)} of {n} tools have a pack entry for their current text")
        print("".join(f"  no entry: {line}\n" for line in absent), end="")
    return 1 if missing else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=default_config())
    args = parser.parse_args(argv)
    return anyio.run(report, args.config)


if __name__ == "__main__":
    raise SystemExit(main())
