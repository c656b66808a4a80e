"""End to end: a scripted client drives workflows through the gateway from think.plan to `done`.

`review_local_v1` runs against mcp-server-git on a throw-away repository over both fronts (the gateway as a
stdio subprocess, and over HTTP), once echoing every result as result_snapshot and once leaving it out for the
steps whose tool call the gateway saw (the observe middleware records them and says so in a hint). A fixture
workflow covers `foreach`, a `when` that skips and one that reads captures, and a success_schema that rejects
a first snapshot (the step stays pending) and accepts the fixed one.
"""

import json
import os
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client

from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.think.workflow import client_side
from tests.harness import ROOT, gateway_params, hints_of, http_client, http_gateway, kitchen, text_of, write_config
from tests.think.harness import FIXTURES

pytestmark = pytest.mark.anyio

REVIEW = {"verdict": "comment", "summary": "Adds a greeting; fine, but it has no test.", "findings": []}
GIT_STEPS = ["status", "branches", "log", "diff"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository on branch `feature`, one commit ahead of `main`."""
    path = tmp_path / "repo"
    path.mkdir()
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}

    def git(*args: str) -> None:
        identity = ["-c", "user.name=Test", "-c", "user.email=test@example.invalid", "-c", "commit.gpgsign=false"]
        subprocess.run(["git", *identity, *args], cwd=path, env=env, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    (path / "hello.py").write_text("print('hello')\n", encoding="utf-8")
    git("add", "hello.py")
    git("commit", "-q", "-m", "Say hello")
    git("checkout", "-q", "-b", "feature")
    (path / "hello.py").write_text("print('hello')\nprint('and welcome')\n", encoding="utf-8")
    git("commit", "-q", "-am", "Welcome too")
    return path


def git_config(tmp_path: Path, repo: Path) -> Path:
    git = {
        "transport": "stdio",
        "command": str(ROOT / ".venv" / "bin" / "mcp-server-git"),
        "args": ["--repository", str(repo)],
    }
    # think.state.get of a finished run is over the default 20 KB inline limit (it would be spilled and paged)
    limits = {"max_inline_bytes": 1_000_000}
    return write_config(tmp_path, {"git": git}, think={"state_dir": str(tmp_path / "state")}, limits=limits)


def ok(result: types.CallToolResult) -> dict[str, Any]:
    """A success: the JSON object as structured_content and, identical, as the (first) text block."""
    assert not result.is_error, text_of(result)
    assert isinstance(result.structured_content, dict)
    assert json.loads(text_of(result)) == result.structured_content
    return result.structured_content


def reference(ins: dict[str, Any]) -> dict[str, Any]:
    return {"workflow": ins["workflow"], "run_id": ins["run_id"], "step_id": ins["step_id"]}


async def drive_review(client: Client, repo: Path, *, echo: bool) -> tuple[dict[str, Any], list[str]]:
    """Plan review_local_v1 and follow every instruction; returns the final answer and the steps taken."""
    ins = ok(await client.call_tool("think.plan", {"workflow": "review_local_v1", "params": {"repo_path": str(repo)}}))
    taken: list[str] = []
    with anyio.fail_after(60):
        while not ins["done"]:
            taken.append(ins["step_id"])
            args = reference(ins)
            if client_side(ins["call"]):
                # prompt.say / local.*: the client acts and always reports; the gateway cannot see the outcome.
                shown = ok(await client.call_tool(ins["call"], ins["input"]))
                args["result_snapshot"] = REVIEW if ins["step_id"] == "review" else shown
            else:
                result = await client.call_tool(ins["call"], ins["input"])
                assert not result.is_error, text_of(result)
                recorded = f"[gateway] Step `{ins['step_id']}` of run {ins['run_id']} recorded by the gateway."
                assert any(h.startswith(recorded) for h in hints_of(result)), hints_of(result)
                if echo:
                    structured = result.structured_content
                    args["result_snapshot"] = structured if isinstance(structured, dict) else {"text": text_of(result)}
            previous = ins
            ins = ok(await client.call_tool("think.next", args))
            if not client_side(previous["call"]):
                assert ins["observation"] == {"used": "observed"}  # an echo that matches: no mismatch reported
    return ins, taken


async def check_review(client: Client, final: dict[str, Any], taken: list[str]) -> None:
    assert taken == ["__driver_bootstrap", "__driver_announce", *GIT_STEPS, "review", "report"]
    assert final["done"] is True
    assert final["summary"] == "Workflow review_local_v1 finished: 8 steps done, 0 skipped."
    artifacts = final["artifacts"]
    assert artifacts["base"] == "main" and artifacts["review"] == REVIEW
    assert "On branch feature" in artifacts["status"]

    state = ok(await client.call_tool("think.state.get", {"workflow": "review_local_v1", "run_id": final["run_id"]}))
    run = state["state"]
    assert run["status"] == "done" and all(s["status"] == "done" for s in run["steps"].values())
    sources = {sid: step["source"] for sid, step in run["steps"].items()}
    assert sources == {
        "__driver_bootstrap": "observed",
        "__driver_announce": "reported",  # the client's report of a prompt.say wins over the acknowledgement
        **dict.fromkeys(GIT_STEPS, "observed"),
        "review": "reported",
        "report": "reported",
    }
    # pruning direct_dependencies: a finished run keeps only the captures its `outputs` read (the diff went to the
    # spill store once `review` had read it)
    assert set(run["captures"]) == {"status", "review"} and run["captures"]["review"]["content"] == REVIEW
    assert run["captures"]["status"]["source"] == "observed" and run["captures"]["review"]["source"] == "reported"
    # ... and the run still replays: the evicted captures (the driver's, the diff) are read from their spills
    ref = {"workflow": "review_local_v1", "run_id": final["run_id"], "action": "replay"}
    replayed = ok(await client.call_tool("think.debug", ref))
    assert replayed["identical"] is True and len(replayed["steps"]) == len(taken), replayed
    assert {r["kept"] for r in final["results"].values()} == {"inline", "evicted"}


async def run_both_ways(client: Client, repo: Path) -> None:
    for echo in (True, False):
        final, taken = await drive_review(client, repo, echo=echo)
        await check_review(client, final, taken)


async def test_review_local_through_the_stdio_gateway(tmp_path: Path, repo: Path) -> None:
    config = git_config(tmp_path, repo)
    with anyio.fail_after(90):
        async with Client(gateway_params(config)) as client:
            await run_both_ways(client, repo)
    assert not list((tmp_path / "state").rglob("*.tmp"))


async def test_review_local_through_the_http_gateway(tmp_path: Path, repo: Path) -> None:
    config = git_config(tmp_path, repo)
    with anyio.fail_after(90):
        async with http_gateway(config) as base, http_client(base) as client:
            await run_both_ways(client, repo)


# -- foreach, when, success_schema --------------------------------------------------------------------------


@asynccontextmanager
async def loop_gateway(tmp_path: Path) -> AsyncIterator[Client]:
    think = {"workflows_dirs": [str(FIXTURES)], "state_dir": str(tmp_path / "state")}
    # think.state.get's JSON is in the result twice (text and structured): over the default 20 KB, it would spill
    config = write_config(tmp_path, {"k": kitchen("k")}, think=think, limits={"max_inline_bytes": 1_000_000})
    gateway = Gateway(load_config(config))
    with anyio.fail_after(60):
        async with gateway.running(), Client(gateway.front.server, mode="legacy") as client:
            yield client


async def test_foreach_when_and_a_rejected_then_fixed_snapshot(tmp_path: Path) -> None:
    files = ["a.py", "b.py", "c.py"]
    async with loop_gateway(tmp_path) as client:
        ins = ok(await client.call_tool("think.plan", {"workflow": "loop_v1", "params": {"files": files}}))
        run = {"workflow": "loop_v1", "run_id": ins["run_id"]}
        ok(await client.call_tool(ins["call"], ins["input"]))  # __driver_bootstrap, observed
        ins = ok(await client.call_tool("think.next", reference(ins)))
        assert ins["step_id"] == "__driver_announce"
        ins = ok(await client.call_tool("think.next", {**reference(ins), "result_snapshot": {"text": "ok"}}))

        # foreach: one step per file, each with its own rendered input; `shout` was skipped by its `when`.
        assert ins["step_id"] == "echo_each[0]" and ins["input"] == {"text": "a.py"}
        assert ins["capture_as"] == "echoes[0]"
        explained = ok(await client.call_tool("think.explain", run))
        assert explained["ready"] == ["echo_each[0]", "echo_each[1]", "echo_each[2]"]
        assert explained["steps"]["shout"] == "skipped" and explained["steps"]["echo_each"] == "expanded"
        for index in (2, 0, 1):  # any ready step, in any order: the gateway matches the call by its input
            result = await client.call_tool("k.echo", {"text": files[index]})
            assert any(f"Step `echo_each[{index}]`" in h for h in hints_of(result))
            step = {**run, "step_id": f"echo_each[{index}]"}
            if index == 1:  # a snapshot that contradicts what the gateway saw: the observed result wins, flagged
                ins = ok(await client.call_tool("think.next", {**step, "result_snapshot": {"text": "zzz"}}))
                assert ins["observation"] == {"used": "observed", "mismatch": ["text"]}
            else:
                ins = ok(await client.call_tool("think.next", step))
                retry = ok(await client.call_tool("think.next", step))  # the same call again: the same answer
                assert "duplicate" in retry.pop("note") and retry == {
                    k: v for k, v in ins.items() if k != "observation"
                }

        # a `when` reading the foreach captures is true: the step runs, its template sees them too
        assert ins["step_id"] == "announce"
        assert ins["input"] == {"text": "Echoed 3 files, the first was a.py."}
        shown = ok(await client.call_tool("prompt.say", ins["input"]))
        ins = ok(await client.call_tool("think.next", {**reference(ins), "result_snapshot": shown}))

        assert ins["step_id"] == "count" and ins["call"] == "local.count"
        assert ins["input"] == {"files": files} and ins["success_schema"] == "counted"
        bad = await client.call_tool("think.next", {**reference(ins), "result_snapshot": {"count": "3", "files": [1]}})
        assert bad.is_error
        body = json.loads(text_of(bad))
        assert body["error"] == "VALIDATION_FAILED" and body["guidance"]
        assert body["details"]["schema"] == "counted"
        assert [e["path"] for e in body["details"]["errors"]] == ["count", "files[0]"]
        pending = ok(await client.call_tool("think.explain", {**run, "step_id": "count"}))
        assert pending["status"] == "pending" and pending["waiting_on"] == []
        assert pending["schema"]["required"] == ["count", "files"]

        fixed = {"count": 3, "files": files}
        final = ok(await client.call_tool("think.next", {**reference(ins), "result_snapshot": fixed}))
        assert final["done"] is True
        assert final["summary"] == "Workflow loop_v1 finished: 7 steps done, 1 skipped."
        assert final["artifacts"] == {"echoed": 3, "count": 3}

        state = ok(await client.call_tool("think.state.get", run))["state"]
        steps = state["steps"]
        assert steps["shout"]["status"] == "skipped" and steps["shout"]["reason"] == "when 'params.loud' was false"
        assert "shouted" not in state["captures"]
        assert [steps[f"echo_each[{i}]"]["item"] for i in range(3)] == files
        echoes = [state["captures"][f"echoes[{i}]"] for i in range(3)]
        assert [e["content"] for e in echoes] == [{"text": f} for f in files]
        assert {e["source"] for e in echoes} == {"observed"}
        assert state["captures"]["checked"]["content"] == fixed and state["captures"]["checked"]["source"] == "reported"
        assert "count" in state["checkpoints"]
        assert state["observed"] == {}  # each observation went into its capture; the state does not keep it twice
