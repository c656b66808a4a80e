"""`gateway serve` on stdio with a chosen middleware chain: `--chain empty` runs `Gateway(config, chain=[])`.

Used by `bench.pipeline_cost` to measure the real stdio front without the pipeline; otherwise the same
as `gateway.serve.stdio` (same telemetry set-up, same stdio front, same limits).
Usage: `python -m bench._stdio_gateway --config PATH [--chain empty|default] [--log-level WARNING]`.
"""

import argparse
import logging
import sys
from pathlib import Path

import anyio

from gateway import telemetry
from gateway.app import Gateway
from gateway.config import GatewayConfig, load_config
from gateway.front_stdio import serve_stdio


async def serve(config: GatewayConfig, empty: bool) -> None:
    gateway = Gateway(config, chain=[] if empty else None)
    async with gateway.running():
        await serve_stdio(gateway.front.server, max_message_bytes=config.limits.max_message_bytes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--config", required=True, type=Path)
    parser.add_argument("--chain", choices=["empty", "default"], default="empty")
    parser.add_argument("--log-level", default="WARNING")
    args = parser.parse_args(argv)
    level: str = args.log_level
    logging.basicConfig(
        level=level.upper(), stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    config = load_config(args.config)
    provider = telemetry.configure(config.telemetry)
    try:
        anyio.run(serve, config, args.chain == "empty")
    except KeyboardInterrupt:
        pass
    finally:
        if provider is not None:
            telemetry.shutdown(provider)
    return 0


if __name__ == "__main__":
    sys.exit(main())
