"""The kitchen server with its HTTP request-body limit lowered, for the POST-rejection tests.

Usage: python kitchen_small_body.py MAX_BODY_BYTES [kitchen options...]
"""

import importlib.util
import sys
from pathlib import Path

KITCHEN = Path(__file__).resolve().parents[1] / "servers" / "kitchen.py"


def main() -> None:
    spec = importlib.util.spec_from_file_location("kitchen", KITCHEN)
    assert spec is not None and spec.loader is not None
    kitchen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kitchen)
    # build_app() reads this module global when it creates the transports.
    vars(kitchen)["MAX_BODY"] = int(sys.argv[1])
    kitchen.main(sys.argv[2:])


if __name__ == "__main__":
    main()
