"""`gateway serve` on stdio with a chosen middleware chain: `--chain empty` runs the front without the pipeline.

Used by `bench.pipeline_cost`; otherwise the same as `gateway serve` (`gateway.serve.stdio`, same telemetry).
Usage: `python -m bench._stdio_gateway --config PATH [--chain empty|default] [--log-level WARNING]`.
"""

import argparse
import logging
import sys
from contextlib import suppress
from pathlib import Path

import anyio

from gateway import telemetry
from gateway.app import serve
from gateway.app.cli import LOG_FORMAT
from gateway.config import load_config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--config", required=True, type=Path)
    parser.add_argument("--chain", choices=["empty", "default"], default="empty")
    parser.add_argument("--log-level", default="WARNING")
    args = parser.parse_args(argv)
    level: str = args.log_level
    logging.basicConfig(level=level.upper(), stream=sys.stderr, format=LOG_FORMAT)
    config = load_config(args.config)
    with telemetry.exporting(config.telemetry), suppress(KeyboardInterrupt):
        anyio.run(serve.stdio, config, [] if args.chain == "empty" else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
