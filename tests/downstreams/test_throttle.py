"""Log floods are cut per client session: at most `per_s` a second pass, the rest are dropped and counted, and
the client is told both when dropping starts and how many went."""

import time
from pathlib import Path

import anyio
import mcp.types as types
import pytest
from mcp import Client

from gateway.downstreams.throttle import MAX_KEYS, Throttle
from tests.harness import gateway_params, text_of, write_config
from tests.system.faults.wire import faulty

pytestmark = pytest.mark.anyio

FLOOD = 5000


async def test_a_log_flood_reaches_the_client_at_most_per_s_a_second_with_notices(tmp_path: Path) -> None:
    logs: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params)

    config = write_config(tmp_path, {"f": faulty()})
    async with Client(gateway_params(config), mode="legacy", logging_callback=on_log) as client:
        started = time.monotonic()
        with anyio.fail_after(60):
            result = await client.call_tool("f.flood", {"count": FLOOD, "log": True})
            await client.list_tools()  # a round trip: the logs sent before it have arrived
        elapsed = time.monotonic() - started
    assert text_of(result) == f"flooded {FLOOD}"
    passed = [p for p in logs if p.data == "x"]
    notices = [str(p.data) for p in logs if p.logger == "gateway"]
    assert 100 <= len(passed) <= 100 * (elapsed + 1), f"{len(passed)} of {FLOOD} in {elapsed:.1f} s"
    assert notices and "drops the rest of this second's" in notices[0]


def test_the_window_counts_what_it_dropped_and_reports_it_with_the_next_that_passes() -> None:
    throttle = Throttle(per_s=2)
    assert [throttle.admit("a") for _ in range(5)] == [(True, 0), (True, 0), (False, -1), (False, 0), (False, 0)]
    assert throttle.admit("b") == (True, 0)  # each session has its own window
    throttle._windows["a"].started -= 1.0  # the next second
    assert throttle.admit("a") == (True, 3)
    throttle.forget("a")
    throttle.forget("b")
    assert throttle._windows == {}


def test_windows_of_keys_never_forgotten_stay_bounded_and_a_pending_drop_count_outlives_ended_windows() -> None:
    now = [0.0]
    throttle = Throttle(per_s=1, clock=lambda: now[0])
    assert [throttle.admit("flood") for _ in range(2)] == [(True, 0), (False, -1)]  # one drop still to report
    for n in range(MAX_KEYS - 1):  # 2026-era connections: keys that are never forgotten
        throttle.admit(f"connection-{n}")
    now[0] = 2.0  # every window has ended
    throttle.admit("one more")  # the bound is reached: the ended windows with nothing to report go
    assert len(throttle) == 2
    assert throttle.admit("flood") == (True, 1)  # its window was kept: the drop is still told
