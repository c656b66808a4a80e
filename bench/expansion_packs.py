"""Which shipped expansion packs still match the tools a config's servers list (config/expansions/, DESIGN §14).

Usage, from the repository root: `.venv/bin/python -m bench.expansion_packs [--config config/examples/gitlab-jira.yaml]`
(the GitLab/Jira example lists its tools with dummy credentials: GITLAB_URL=https://gitlab.example.com and so on).

Starts the config's servers, lists their tools and prints, per server, how many tools have a pack entry written for
their current description, and names the others: a tool whose description changed (a new server version) has no
expansions until its entry is written again from the new text, by the same rule (the tool's own name, description
and parameters only; never a labelled query), with the new `description_sha256`.

It waits for each server's first start (a `package:`/`npm:` server's install included) up to `--wait` seconds; the
servers not up then are named on stderr, and the exit status is 2 (1: a tool has no entry; 0: all have one).
"""

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import anyio
import mcp.types as types

from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.config.bundled import default_config
from gateway.downstreams.state import State
from gateway.middleware.exposure.expansions import description_hash, shipped_for
from gateway.middleware.exposure.listed import OWN_SERVERS


async def report(config: Path, wait_s: float = 600.0) -> int:
    gateway = Gateway(load_config(config))
    async with gateway.running():
        # Start-up serves without servers slower than `limits.startup_wait_s`: a first install takes minutes.
        with anyio.move_on_after(wait_s):
            async with anyio.create_task_group() as tg:
                for downstream in gateway.registry.downstreams.values():
                    tg.start_soon(downstream.settled)
        catalog = await gateway.registry.catalog()
        down = {name: ds for name, ds in gateway.registry.downstreams.items() if ds.state is not State.UP}
    missing: defaultdict[str, list[str]] = defaultdict(list)
    counted: defaultdict[str, int] = defaultdict(int)
    for entry in catalog.tools.values():
        if entry.server in OWN_SERVERS or not isinstance(entry.item, types.Tool):
            continue
        counted[entry.server] += 1
        description = entry.item.description or ""
        if not shipped_for(entry.original, digest := description_hash(description)):
            missing[entry.server].append(f"{entry.original} (description_sha256 {digest})")
    for server, n in sorted(counted.items()):
        absent = missing.get(server, [])  # not missing[server]: a key made here would fail the exit status below
        print(f"{server}: {n - len(absent)} of {n} tools have a pack entry for their current text")
        print("".join(f"  no entry: {line}\n" for line in absent), end="")
    if down:
        waited = f"each one's first start was waited for, up to --wait {wait_s:g} s"
        servers = "1 server is" if len(down) == 1 else f"{len(down)} servers are"
        print(f"{servers} not up, so their tools are not counted ({waited}):", file=sys.stderr)
        for name, downstream in down.items():
            why = downstream.last_error or (
                "its install or first handshake has not ended" if downstream.state is State.STARTING else ""
            )
            print(f"  {name} ({downstream.state}){f': {why}' if why else ''}", file=sys.stderr)
        return 2
    return 1 if missing else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=default_config())
    parser.add_argument("--wait", type=float, default=600.0, help="seconds to wait for the servers to start")
    args = parser.parse_args(argv)
    return anyio.run(report, args.config, args.wait)


if __name__ == "__main__":
    raise SystemExit(main())
