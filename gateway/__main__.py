"""`python -m gateway` and the `gateway` command (`run`)."""

import gc
import sys


def run() -> int:
    """The `gateway` command. Its imports (the SDK's models of two protocol eras among them) build some hundreds of
    thousands of objects, none of them garbage: the collector's passes over them were ~0.13 s of a start's ~0.75 s
    of CPU. So nothing is collected until they are in, and what they built is kept out of every later pass."""
    gc.disable()
    try:
        from gateway.app.cli import main
    finally:
        gc.freeze()
        gc.enable()
    return main()


if __name__ == "__main__":
    sys.exit(run())
