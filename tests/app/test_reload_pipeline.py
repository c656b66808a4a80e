"""A reload rebuilds the request pipeline (steering, policy, limits, …) for calls that start afterwards while a call
in flight finishes on the pipeline it started with; keys only a restart applies are named, with why, and keep
their running value; a config whose pipeline cannot be built is refused and changes nothing."""

from pathlib import Path

import anyio
import mcp.types as types
import pytest

from gateway.app.gateway import Gateway
from gateway.app.reloadable import RESTART_ONLY
from gateway.middleware.render import Render
from tests.app.test_reload import reload, reloading, write
from tests.harness import kitchen, text_of, wait_for

pytestmark = pytest.mark.anyio


def render_of(gateway: Gateway) -> Render:
    return next(mw for mw in gateway.pipeline.chain if isinstance(mw, Render))


def hints(result: types.CallToolResult) -> list[str]:
    return [h["text"] for h in (result.meta or {}).get("gateway/hints", []) if h["kind"] == "steering"]


def steering(text: str) -> dict[str, object]:
    return {"hints": [{"tools": ["a.*"], "on": "any", "text": text}]}


async def test_a_reload_rebuilds_the_pipeline_for_new_calls_while_a_call_in_flight_keeps_its_own(
    tmp_path: Path,
) -> None:
    events = tmp_path / "a.events"
    servers = {"a": kitchen("a", events=events)}
    path = write(tmp_path / "gateway.yaml", servers, steering=steering("Old hint."))
    async with reloading(path) as (gateway, client, heard):
        assert hints(await client.call_tool("a.echo", {"text": "x"})) == ["Old hint."]
        assert not (await client.call_tool("a.measure", {"text": "x" * 500})).is_error
        slow: list[types.CallToolResult] = []

        async def call_slow() -> None:
            slow.append(await client.call_tool("a.slow", {"steps": 6, "delay_s": 0.25}))

        async with anyio.create_task_group() as tg:
            tg.start_soon(call_slow)
            await wait_for(lambda: events.exists() and "call slow" in events.read_text(), 10, "the slow call started")
            heard.mark()
            write(
                path,
                servers,
                steering=steering("New hint."),
                policy={"rules": [{"deny": ["a.measure"]}]},
                limits={"max_request_bytes": 200},
            )
            report = await reload(gateway)
            assert report.ok and report.applied == ["limits.max_request_bytes", "steering", "policy"]
            assert report.needs_restart == {} and report.restarted == []
            assert report.notified == ["tools", "prompts", "resources"]  # the policy covers them all
            assert not slow  # still in flight across the reload
            assert hints(await client.call_tool("a.echo", {"text": "x"})) == ["New hint."]
            denied = await client.call_tool("a.measure", {"text": "x"})
            assert denied.is_error and "policy" in text_of(denied) and "a.measure" in text_of(denied)
            big = await client.call_tool("a.echo", {"text": "x" * 500})
            assert big.is_error and "max_request_bytes" in text_of(big)
        [finished] = slow
        assert not finished.is_error and hints(finished) == ["Old hint."], text_of(finished)
        with anyio.fail_after(10):
            await heard.event.wait()  # the policy hides a.measure from listings: clients are told
        assert "a.measure" not in {t.name for t in (await client.list_tools(cache_mode="bypass")).tools}


async def test_a_reload_names_each_change_that_needs_a_restart_keeps_its_running_value_and_reports_its_timings(
    tmp_path: Path,
) -> None:
    servers = {"a": kitchen("a")}
    path = write(tmp_path / "gateway.yaml", servers)
    async with reloading(path) as (gateway, client, _):
        port = gateway.config.listen.port
        write(
            path,
            {**servers, "b": kitchen("b")},
            listen={"port": port + 1},
            store={"prefix": "other:"},
            clients={"window_s": 60},
            limits={"max_message_bytes": 2**20, "hint_budget_chars": 500, "url_elicitations_per_session": 3},
        )
        for attempt in range(2):  # applied or not, a pending restart is named at each reload until it happens
            report = await reload(gateway)
            assert report.added == ([] if attempt else ["b"])
            assert gateway.health()["last_reload"] == report.as_dict()  # what an edit of the file did, and when
            assert report.ok and report.needs_restart == {
                key: RESTART_ONLY[key] for key in ("listen", "store", "clients", "limits.max_message_bytes")
            }
            assert gateway.config.clients.window_s == 1800  # the running value stays
            assert gateway.config.listen.port == port and gateway.config.limits.max_message_bytes != 2**20
            assert render_of(gateway).hint_budget == 500 and gateway.config.limits.hint_budget_chars == 500
            assert gateway.relay.url_asks.per_session == 3
            if not attempt:
                assert list(report.timings) == ["validated", "up:b", "listed"]
        assert report.applied == []  # the hint budget already applied at the first reload
        assert text_of(await client.call_tool("a.echo", {"text": "on"})) == "on"


async def test_a_config_whose_pipeline_cannot_be_built_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    servers = {"a": kitchen("a")}
    path = write(tmp_path / "gateway.yaml", servers, steering=steering("Kept."))
    async with reloading(path) as (gateway, client, _):
        write(path, {**servers, "b": kitchen("b")}, steering=steering("Lost."), bootstrap={"driver_version": "v-none"})
        report = await reload(gateway)
        assert not report.ok and report.error is not None and "v-none" in report.error
        assert hints(await client.call_tool("a.echo", {"text": "x"})) == ["Kept."]
        assert (await client.call_tool("b.echo", {"text": "x"})).is_error  # the servers were not touched either
