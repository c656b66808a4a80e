"""A tool call's time limit follows its server's progress: each notification grants `timeout_s` again, up to
`max_timeout_s`; a silent server still fails at `timeout_s`. The kitchen's `slow` tool reports progress before
each of its sleeps; the client here asks for no progress (the gateway asks the server regardless)."""

import time
from pathlib import Path

import anyio
import pytest

from gateway.downstreams.deadline import PROGRESS_PER_S, Deadline
from tests.harness import connected, kitchen, text_of, write_config

pytestmark = pytest.mark.anyio

WORKING = {"steps": 7, "delay_s": 0.2}  # 1.4 s in all, never 0.2 s without a progress notification


async def test_a_call_whose_server_reports_progress_outlives_its_timeout(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"k": kitchen("k", timeout_s=1)})
    async with connected(config) as (_, client):
        result = await client.call_tool("k.slow", WORKING)
        silent = await client.call_tool("k.hang", {})
    assert not result.is_error and text_of(result).startswith("slow done")
    assert silent.is_error and "did not answer within 1 s (its timeout_s)" in text_of(silent)


async def test_progress_extends_a_call_only_up_to_max_timeout_s(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"k": kitchen("k", timeout_s=1, max_timeout_s=1.2)})
    async with connected(config) as (_, client):
        result = await client.call_tool("k.slow", WORKING)
    assert result.is_error and "did not answer within 1.2 s (its max_timeout_s)" in text_of(result)


async def test_a_progress_flood_reaches_the_client_cut_to_the_rate_with_a_count_of_the_skipped(tmp_path: Path) -> None:
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    config = write_config(tmp_path, {"k": kitchen("k")})
    async with connected(config) as (_, client):
        started = time.monotonic()
        result = await client.call_tool("k.slow", {"steps": 3000, "delay_s": 0}, progress_callback=on_progress)
        elapsed = time.monotonic() - started
    assert text_of(result).startswith("slow done")
    # At most one window a second began, plus the newest missed one sent at the end.
    assert 1 <= len(seen) <= PROGRESS_PER_S * (elapsed + 1) + 1, f"{len(seen)} of 3000 in {elapsed:.1f} s"
    assert any(message and "progress updates skipped)" in message for _, message in seen)


async def test_the_result_waits_for_progress_still_on_its_way_to_the_client() -> None:
    """The SDK relays each progress in a task of its own: one still sending when the result comes must get there
    first (a client drops progress of a request it has the answer to)."""
    sending, release = anyio.Event(), anyio.Event()
    order: list[object] = []

    async def relay(progress: float, total: float | None, message: str | None) -> None:
        sending.set()
        await release.wait()  # the client's stream is slow
        order.append(progress)

    deadline = Deadline(10, None, relay)

    async def result() -> None:
        await deadline.flush()
        order.append("result")

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(deadline.progress, 3.0, 3.0, "step 3")
            await sending.wait()
            tg.start_soon(result)
            await anyio.wait_all_tasks_blocked()
            release.set()
    assert order == [3.0, "result"]
