"""Policy and audit on a real HTTP gateway: each identity lists and calls only what its rules allow, denials
name the rule, and every call leaves one audit line (refused ones included) with no argument values."""

import getpass
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.harness import ROOT, gateway_command, http_client, http_gateway, kitchen, stop, text_of, write_config

pytestmark = pytest.mark.anyio

ALICE, BOB = "alice-token-0123456789", "bob-token-0123456789ab"
HOLDER = {"transport": "stdio", "command": sys.executable, "args": [str(ROOT / "tests" / "servers" / "holder.py")]}
RULES = [
    {"name": "no-wipe", "deny": ["*.wipe"]},
    {"name": "dev", "groups": ["dev"], "allow": ["h.*"]},
    {"name": "interns", "groups": ["interns"], "read_only": True},
]


def config(tmp_path: Path) -> Path:
    tokens = [
        {"name": "alice", "token": ALICE, "groups": ["dev"]},
        {"name": "bob", "token": BOB, "groups": ["interns"]},
    ]
    return write_config(
        tmp_path,
        {"h": HOLDER, "k": kitchen("k")},
        auth={"tokens": tokens},
        policy={"rules": RULES},
        audit={"path": "audit.jsonl"},
    )


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def downstream_tools(names: list[str]) -> list[str]:
    return sorted(n for n in names if n.startswith(("h.", "k.")))


async def test_each_identity_sees_and_calls_what_its_rules_allow_and_every_call_is_audited(tmp_path: Path) -> None:
    async with http_gateway(config(tmp_path)) as base:
        async with http_client(base, headers=bearer(ALICE)) as alice:
            alice_sees = [t.name for t in (await alice.list_tools()).tools]
            whoami = await alice.call_tool("h.whoami", {})
            wipe = await alice.call_tool("h.wipe", {})
            echo = await alice.call_tool("k.echo", {"text": "private words"})
        async with http_client(base, headers=bearer(BOB), mode="legacy") as bob:
            bob_sees = [t.name for t in (await bob.list_tools()).tools]
            note = await bob.call_tool("h.note", {})
            think = "think.workflows.list" in bob_sees
    assert downstream_tools(alice_sees) == ["h.note", "h.whoami"]
    assert downstream_tools(bob_sees) == ["h.whoami"] and think  # the gateway's own tools stay
    assert json.loads(text_of(whoami))["tool"] == "whoami"
    assert wipe.is_error and "'no-wipe'" in text_of(wipe) and "'*.wipe'" in text_of(wipe)
    assert echo.is_error and "'dev'" in text_of(echo) and "alice" in text_of(echo)
    assert note.is_error and "'interns'" in text_of(note) and "readOnlyHint" in text_of(note)

    lines = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert (tmp_path / "audit.jsonl").stat().st_mode & 0o777 == 0o600
    calls = [(r["identity"], r["tool"], r["outcome"]) for r in lines]
    assert calls == [
        ("alice", "h.whoami", "ok"),
        ("alice", "h.wipe", "PolicyDenied"),
        ("alice", "k.echo", "PolicyDenied"),
        ("bob", "h.note", "PolicyDenied"),
    ]
    first: dict[str, Any] = lines[0]
    assert first["server"] == "h" and first["server_tool"] == "whoami" and first["response_bytes"] > 0
    assert first["duration_ms"] >= 0 and first["principal"] == "static::alice" and len(first["session"]) == 16
    assert first["decisions"]["hints"] == ["bootstrap"]
    assert lines[1]["decisions"]["refused"] == "policy" and lines[1]["server"] is None
    expected = hashlib.sha256(json.dumps({"text": "private words"}, separators=(",", ":")).encode()).hexdigest()
    assert lines[2]["arguments_sha256"] == expected
    assert "private words" not in (tmp_path / "audit.jsonl").read_text()
    assert lines[0]["session"] != lines[3]["session"]


async def test_check_as_prints_what_an_identity_would_see_and_why_the_rest_is_hidden(tmp_path: Path) -> None:
    path = config(tmp_path)
    argv, env = gateway_command(["check", "--config", str(path)], os.environ)
    said: dict[str, subprocess.CompletedProcess[bytes]] = {}

    async def check_as(who: str, *groups: str) -> None:
        said[who] = await anyio.run_process([*argv, "--as", who, *groups], cwd=str(ROOT), env=env)

    with anyio.fail_after(60):
        async with anyio.create_task_group() as both:  # two processes: their start-ups overlap
            both.start_soon(check_as, "bob")
            both.start_soon(check_as, "carol", "--groups", "dev")
    bob, carol = said["bob"], said["carol"]
    bob_lines = bob.stdout.decode().splitlines()
    assert bob_lines[0].startswith("as bob (groups: interns): ")
    assert "  h.whoami" in bob_lines and "  think.next" in bob_lines
    assert "  h.note: read-only mode, and it is not annotated readOnlyHint (policy rule 'interns')" in bob_lines
    assert "  h.wipe: denied by '*.wipe' (policy rule 'no-wipe')" in bob_lines
    carol_lines = carol.stdout.decode().splitlines()
    assert "  h.note" in carol_lines and "  k.echo: it matches no allow list (policy rule 'dev')" in carol_lines


def answers_in(out: bytes) -> list[dict[str, Any]]:
    """The answers among the whole lines written so far (a notification, e.g. a list change, may come between)."""
    whole = out.decode().rsplit("\n", 1)[0].splitlines() if b"\n" in out else []
    return [m for m in map(json.loads, whole) if "id" in m]


async def test_audit_to_stdout_on_the_stdio_front_goes_to_stderr_and_leaves_the_protocol_clean(tmp_path: Path) -> None:
    path = write_config(tmp_path, {"k": kitchen("k")}, audit={"path": "-"})
    initialize = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "k.echo", "arguments": {"text": "x"}}},
    ]
    argv = [sys.executable, "-m", "gateway", "serve", "--config", str(path), "--log-level", "WARNING"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = await anyio.open_process(argv, cwd=str(ROOT), env=env)
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    try:
        with anyio.fail_after(60):
            await process.stdin.send("".join(json.dumps(m) + "\n" for m in lines).encode())
            out = b""
            while len(answers_in(out)) < 2:
                out += await process.stdout.receive()
            await process.stdin.aclose()
            err = b"".join([chunk async for chunk in process.stderr])
    finally:
        await stop(process)
    messages = [json.loads(line) for line in out.decode().splitlines()]  # every line of stdout is protocol
    answers = answers_in(out)
    assert [a.get("id") for a in answers] == [1, 2] and answers[1]["result"]["content"][0]["text"] == "x"
    assert all("id" in m or "method" in m for m in messages)
    audit = [json.loads(line) for line in err.decode().splitlines() if line.startswith('{"time"')]
    assert [(a["tool"], a["outcome"], a["identity"]) for a in audit] == [("k.echo", "ok", getpass.getuser())]


async def test_search_finds_for_each_identity_only_what_its_rules_let_it_see(tmp_path: Path) -> None:
    path = config(tmp_path)
    text = path.read_text() + "exposure: {mode: search}\n"
    path.write_text(text)

    async def found(token: str, query: str) -> set[str]:
        async with http_client(base, headers=bearer(token)) as client:
            answer = await client.call_tool("gateway.find_tools", {"query": query, "limit": 10})
        assert answer.structured_content is not None
        return {t["name"] for t in answer.structured_content["tools"]}

    async with http_gateway(path) as base:
        alice_finds = await found(ALICE, "pretend to write a note delete everything credential")
        bob_finds = await found(BOB, "pretend to write a note delete everything credential")
    assert {"h.note", "h.whoami"} <= alice_finds and "h.wipe" not in alice_finds
    assert "h.whoami" in bob_finds and not {"h.note", "h.wipe"} & bob_finds
