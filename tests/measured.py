"""`python -m tests.measured ARGS`: `gateway ARGS` as a coverage run's tests start it (`tests.harness.gateway_command`),
measured from after its imports.

Coverage started by its `.pth` hook traces the interpreter's whole start: the SDK's models of two protocol eras and
the gateway's modules, ~0.3 s of CPU more per start, paid by each of the ~300 gateways a run starts, for lines the
test process counts anyway (it imports the same modules). So the command's imports run first, with the collector
paused as `gateway.__main__.run` does; then coverage starts from the configuration the test process handed over, and
the command runs through its own entry point. What this gateway starts inherits the configuration, as before.
"""

import gc
import os
import sys

HANDED = "GATEWAY_TESTS_COVERAGE"
"""Where `gateway_command` hands over the run's configuration: under coverage's own name, the `.pth` hook would start
it before the imports."""


def measured() -> int:
    gc.disable()
    try:
        import gateway.app.cli  # noqa: F401 - the command's imports, before coverage starts
    finally:
        gc.freeze()
        gc.enable()
    os.environ["COVERAGE_PROCESS_CONFIG"] = os.environ.pop(HANDED)
    import coverage

    coverage.process_startup()
    from gateway.__main__ import run  # the command's own entry point, measured (its imports are in by now)

    return run()


if __name__ == "__main__":
    sys.exit(measured())
